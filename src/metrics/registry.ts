/**
 * The metrics registry (C53): counters, gauges and histograms whose label
 * values the recording functions of families.ts choose from bounded sets.
 * Recording is a Map lookup and an addition; the text is written only when
 * scraped (exposition.ts), from snapshots, which the supervisor of WORKERS=n
 * also gets from each worker and merges (mergeSnapshots).
 */

export type MetricType = 'counter' | 'gauge' | 'histogram'

/**
 * How the workers' values of a gauge make one (WORKERS=n): `sum` for amounts
 * the service holds as a whole (bytes, waiting requests, subscribers); `min`
 * for "every worker is well" (the change listener is up only when every
 * worker's is); `max` for "the worst one" (replica lag). Counters and
 * histograms are always summed.
 */
export type Merge = 'sum' | 'min' | 'max'

/** One labelled series: a counter's or gauge's value, or a histogram's count per bucket (not cumulative), sum and count. */
export interface SeriesSnapshot {
  labels: string[]
  value: number
  buckets?: number[]
  sum?: number
}

/** What a scrape reads of a family; plain data, sent from a worker to its supervisor as it is. */
export interface FamilySnapshot {
  name: string
  help: string
  type: MetricType
  labelNames: string[]
  merge: Merge
  /** Histograms: the upper bounds of the buckets, +Inf left out. */
  bounds?: number[]
  series: SeriesSnapshot[]
}

interface Definition {
  name: string
  help: string
  labelNames?: string[]
  /** Gauges only; see Merge. */
  merge?: Merge
}

/** A series of a counter or gauge, kept by the recording function that adds to it often. */
export interface Cell {
  value: number
}

abstract class Family<Series> {
  readonly name: string
  readonly help: string
  readonly labelNames: string[]
  readonly #series = new Map<string, { labels: string[]; series: Series }>()
  /** Runs before each snapshot: a gauge read from its owner at scrape time sets itself here. */
  beforeSnapshot: (() => void) | undefined

  constructor(definition: Definition) {
    this.name = definition.name
    this.help = definition.help
    this.labelNames = definition.labelNames ?? []
  }

  /**
   * The series of these label values (one per label name, in order), made on first use.
   * @example const hits = cacheRequests.series(['hit']); hits.value++
   */
  series(labels: readonly string[] = []): Series {
    const key = labels.length === 1 ? labels[0] : labels.join('\u0000')
    const found = this.#series.get(key)
    if (found) return found.series
    if (labels.length !== this.labelNames.length) throw new TypeError(`${this.name} takes the labels ${this.labelNames.join(', ')}.`)
    const series = this.create()
    this.#series.set(key, { labels: [...labels], series })
    return series
  }

  /** Forgets every series (a test's fresh start). */
  reset(): void {
    this.#series.clear()
  }

  protected abstract create(): Series

  protected entries(): { labels: string[]; series: Series }[] {
    return [...this.#series.values()]
  }

  abstract snapshot(): FamilySnapshot
}

export class Counter extends Family<Cell> {
  readonly type = 'counter'

  /** @example requests.inc(['hit']) */
  inc(labels?: readonly string[], by = 1): void {
    this.series(labels).value += by
  }

  protected create(): Cell {
    return { value: 0 }
  }

  snapshot(): FamilySnapshot {
    this.beforeSnapshot?.()
    return { name: this.name, help: this.help, type: 'counter', labelNames: this.labelNames, merge: 'sum', series: this.entries().map(({ labels, series }) => ({ labels, value: series.value })) }
  }
}

export class Gauge extends Family<Cell> {
  readonly type = 'gauge'
  readonly merge: Merge

  constructor(definition: Definition) {
    super(definition)
    this.merge = definition.merge ?? 'sum'
  }

  /** @example replicaLag.set(['0'], 0.2) */
  set(labels: readonly string[] | undefined, value: number): void {
    this.series(labels).value = value
  }

  /** @example heavyWaiting.add(undefined, 1) */
  add(labels: readonly string[] | undefined, by: number): void {
    this.series(labels).value += by
  }

  protected create(): Cell {
    return { value: 0 }
  }

  snapshot(): FamilySnapshot {
    this.beforeSnapshot?.()
    return { name: this.name, help: this.help, type: 'gauge', labelNames: this.labelNames, merge: this.merge, series: this.entries().map(({ labels, series }) => ({ labels, value: series.value })) }
  }
}

/** A histogram's series: counts per bucket (the last one past every bound: +Inf), their sum and count. */
export interface HistogramSeries {
  buckets: number[]
  sum: number
  count: number
}

export class Histogram extends Family<HistogramSeries> {
  readonly type = 'histogram'
  readonly bounds: readonly number[]

  constructor(definition: Definition & { bounds: readonly number[] }) {
    super(definition)
    this.bounds = definition.bounds
  }

  /**
   * Counts one observation; the bucket is found by a scan of the bounds (a dozen numbers).
   * @example statementDuration.observe(['cheap', 'primary'], 0.0021)
   */
  observe(labels: readonly string[] | undefined, value: number): void {
    observeInto(this.series(labels), this.bounds, value)
  }

  protected create(): HistogramSeries {
    return { buckets: new Array<number>(this.bounds.length + 1).fill(0), sum: 0, count: 0 }
  }

  snapshot(): FamilySnapshot {
    this.beforeSnapshot?.()
    return {
      name: this.name,
      help: this.help,
      type: 'histogram',
      labelNames: this.labelNames,
      merge: 'sum',
      bounds: [...this.bounds],
      series: this.entries().map(({ labels, series }) => ({ labels, value: series.count, buckets: [...series.buckets], sum: series.sum })),
    }
  }
}

/**
 * Counts `value` into a histogram series whose bounds are `bounds`.
 * @example observeInto(series, [0.1, 1], 0.5) // series.buckets: [0, 1, 0]
 */
export function observeInto(series: HistogramSeries, bounds: readonly number[], value: number): void {
  let bucket = 0
  while (bucket < bounds.length && value > bounds[bucket]) bucket++
  series.buckets[bucket]++
  series.sum += value
  series.count++
}

/** The families a scrape reports, in the order they are exposed. */
export class Registry {
  readonly #families: (Counter | Gauge | Histogram)[] = []

  counter(definition: Definition): Counter {
    return this.#add(new Counter(definition))
  }

  gauge(definition: Definition): Gauge {
    return this.#add(new Gauge(definition))
  }

  histogram(definition: Definition & { bounds: readonly number[] }): Histogram {
    return this.#add(new Histogram(definition))
  }

  snapshot(): FamilySnapshot[] {
    return this.#families.map((family) => family.snapshot())
  }

  reset(): void {
    for (const family of this.#families) family.reset()
  }

  #add<F extends Counter | Gauge | Histogram>(family: F): F {
    if (this.#families.some((known) => known.name === family.name)) throw new TypeError(`The metric ${family.name} is defined twice.`)
    this.#families.push(family)
    return family
  }
}

/**
 * Several processes' snapshots as one (WORKERS=n): counters and histograms
 * summed per label set, gauges by their `merge`. Families are matched by
 * name: every process runs the same code, so they define the same ones.
 * @example mergeSnapshots([supervisor, ...workers])
 */
export function mergeSnapshots(snapshots: readonly FamilySnapshot[][]): FamilySnapshot[] {
  const merged = new Map<string, { family: FamilySnapshot; series: Map<string, SeriesSnapshot> }>()
  for (const families of snapshots) {
    for (const family of families) {
      let into = merged.get(family.name)
      if (!into) {
        into = { family: { ...family, series: [] }, series: new Map() }
        merged.set(family.name, into)
      }
      for (const series of family.series) {
        const key = series.labels.join('\u0000')
        const known = into.series.get(key)
        if (!known) {
          into.series.set(key, { ...series, labels: [...series.labels], buckets: series.buckets && [...series.buckets] })
          continue
        }
        known.value = combine(family.type === 'gauge' ? family.merge : 'sum', known.value, series.value)
        if (known.buckets && series.buckets) series.buckets.forEach((count, index) => (known.buckets![index] += count))
        if (known.sum !== undefined && series.sum !== undefined) known.sum += series.sum
      }
    }
  }
  return [...merged.values()].map(({ family, series }) => ({ ...family, series: [...series.values()] }))
}

function combine(merge: Merge, a: number, b: number): number {
  if (merge === 'min') return Math.min(a, b)
  if (merge === 'max') return Math.max(a, b)
  return a + b
}

/**
 * Only what keeps counting across a process's end: its counters and
 * histograms (a dead worker's gauges say nothing of the service any more).
 */
export function countersOf(families: readonly FamilySnapshot[]): FamilySnapshot[] {
  return families.filter((family) => family.type !== 'gauge')
}
