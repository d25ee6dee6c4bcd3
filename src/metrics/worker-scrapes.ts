import { countersOf, mergeSnapshots, type FamilySnapshot } from './registry'

/** What the supervisor sends a worker, and the worker's answer, over Bun's IPC. */
interface ScrapeRequest {
  vitrineMetricsScrape: number
}
interface ScrapeAnswer {
  vitrineMetricsAnswer: number
  families: FamilySnapshot[]
}

/** How long a scrape waits for a worker before it counts that worker's last answer. */
const WORKER_ANSWER_MS = 2000

interface Worker {
  send: (message: ScrapeRequest) => void
  /** Its last answer: stands in when it is slow to answer a scrape. */
  last: FamilySnapshot[] | undefined
  waiting: Map<number, (families: FamilySnapshot[]) => void>
}

/**
 * WORKERS=n (C53): the supervisor's side of a scrape. Each scrape asks every
 * worker over Bun's IPC for its families and sums them (mergeSnapshots) with
 * the supervisor's own: the counts are exact, each request counted by the
 * worker that answered it. A worker that has ended leaves its counters and
 * histograms behind (as of its last answer), so that the service's counters
 * never go down when a worker is restarted.
 * @example const scrapes = new WorkerScrapes(); scrapes.add(worker, (message) => worker.send(message))
 */
export class WorkerScrapes {
  readonly #workers = new Map<object, Worker>()
  #retired: FamilySnapshot[] = []
  #next = 1

  /** A worker started; `send` writes to its IPC channel. */
  add(worker: object, send: (message: unknown) => void): void {
    this.#workers.set(worker, { send, last: undefined, waiting: new Map() })
  }

  /** A worker ended: its counts stay in the service's. */
  remove(worker: object): void {
    const known = this.#workers.get(worker)
    this.#workers.delete(worker)
    if (known?.last) this.#retired = mergeSnapshots([this.#retired, countersOf(known.last)])
  }

  /** A message from a worker's IPC channel; true when it was the answer to a scrape. */
  receive(worker: object, message: unknown): boolean {
    const answer = message as Partial<ScrapeAnswer> | null
    if (typeof answer?.vitrineMetricsAnswer !== 'number' || !Array.isArray(answer.families)) return false
    const known = this.#workers.get(worker)
    if (!known) return true
    known.last = answer.families
    known.waiting.get(answer.vitrineMetricsAnswer)?.(answer.families)
    known.waiting.delete(answer.vitrineMetricsAnswer)
    return true
  }

  /** Every worker's families and `own` (the supervisor's process), merged. */
  async gather(own: FamilySnapshot[]): Promise<FamilySnapshot[]> {
    const id = this.#next++
    const answers = await Promise.all([...this.#workers.values()].map((worker) => this.#ask(worker, id)))
    return mergeSnapshots([own, this.#retired, ...answers.filter((answer) => answer !== undefined)])
  }

  #ask(worker: Worker, id: number): Promise<FamilySnapshot[] | undefined> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        worker.waiting.delete(id)
        resolve(worker.last)
      }, WORKER_ANSWER_MS)
      worker.waiting.set(id, (families) => {
        clearTimeout(timer)
        resolve(families)
      })
      try {
        worker.send({ vitrineMetricsScrape: id })
      } catch {
        clearTimeout(timer)
        worker.waiting.delete(id)
        resolve(worker.last)
      }
    })
  }
}

/**
 * A worker's side: answers its supervisor's scrapes over IPC with `snapshot()`.
 * @example answerScrapes(() => registry.snapshot())
 */
export function answerScrapes(snapshot: () => FamilySnapshot[]): void {
  process.on('message', (message: unknown) => {
    const request = message as Partial<ScrapeRequest> | null
    if (typeof request?.vitrineMetricsScrape !== 'number') return
    const answer: ScrapeAnswer = { vitrineMetricsAnswer: request.vitrineMetricsScrape, families: snapshot() }
    process.send?.(answer)
  })
}
