/**
 * C47, fair lanes: statements whose cost grows with the data (pages deep by
 * number, searches, several filters at once) run in a bounded share of a
 * pool, so that a flood of them cannot take every connection, nor the
 * database's every core, from the cheap statements behind them.
 *
 * A pool has one heavy lane of `slots` places; a heavy statement waits for a
 * place in a first-come line of at most `line` requests. A request that finds
 * the line full, or whose deadline passes while it waits, gets a 503 with
 * Retry-After (C22) and sends no statement. Cheap statements never wait here.
 */
import { AsyncLocalStorage } from 'node:async_hooks'

import { recordHeavyLaneWaiting } from '../metrics/families'

/** A pool's lane settings: DATABASE_HEAVY_MAX and DATABASE_HEAVY_QUEUE. */
export interface LaneSettings {
  slots: number
  line: number
}

/** Why a heavy statement was not run: its lane's line was full, or its deadline passed in the line. */
export class LaneRefusal extends Error {
  constructor(readonly code: 'HEAVY_QUEUE_FULL' | 'HEAVY_WAIT_TIMEOUT', message: string) {
    super(message)
    this.name = 'LaneRefusal'
  }
}

interface Waiter {
  admit: () => void
  timer: ReturnType<typeof setTimeout>
}

export class HeavyLane {
  private running = 0
  private readonly waiting: Waiter[] = []

  constructor(readonly settings: LaneSettings) {}

  /** Statements running in the lane now, and requests waiting in its line (for tests and the log). */
  get load(): { running: number; waiting: number } {
    return { running: this.running, waiting: this.waiting.length }
  }

  /**
   * A place in the lane, within `waitMs`: resolves with the function that
   * gives it back (call it once, when the statement has settled).
   * @example const leave = await lane.enter(5000); try { await statement } finally { leave() }
   */
  enter(waitMs: number): Promise<() => void> {
    if (this.running < this.settings.slots && this.waiting.length === 0) return Promise.resolve(this.take())
    if (this.waiting.length >= this.settings.line) {
      return Promise.reject(new LaneRefusal('HEAVY_QUEUE_FULL', `${this.settings.line} heavy statements already wait for the ${this.settings.slots} heavy place(s).`))
    }
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        admit: () => {
          clearTimeout(waiter.timer)
          resolve(this.take())
        },
        timer: setTimeout(() => {
          this.waiting.splice(this.waiting.indexOf(waiter), 1)
          recordHeavyLaneWaiting(-1)
          reject(new LaneRefusal('HEAVY_WAIT_TIMEOUT', `No heavy place came free within ${Math.round(waitMs)} ms.`))
        }, Math.max(0, waitMs)),
      }
      this.waiting.push(waiter)
      recordHeavyLaneWaiting(1)
    })
  }

  private take(): () => void {
    this.running++
    let left = false
    return () => {
      if (left) return
      left = true
      this.running--
      const next = this.waiting.shift()
      if (next) recordHeavyLaneWaiting(-1)
      next?.admit()
    }
  }
}

const lanes = new WeakMap<object, HeavyLane>()

/** Gives a pool its heavy lane (openReadPool does, from the settings). */
export function setHeavyLane(pool: object, settings: LaneSettings): HeavyLane {
  const lane = new HeavyLane(settings)
  lanes.set(pool, lane)
  return lane
}

/** The pool's heavy lane; a pool given none (an admin pool) runs every statement at once. */
export function heavyLaneOf(pool: object): HeavyLane | undefined {
  return lanes.get(pool)
}

/**
 * What lets the request being served run a heavy statement: C52's heavy
 * quota (src/quotas/) gives each request one, and `runRead` asks it right
 * before a heavy statement would run, so that an answer from the cache never
 * costs a heavy unit. `admit` throws to refuse (the request gets that error).
 */
export interface HeavyAdmission {
  admit(): void
}

/**
 * The heavy admission of the request whose work is running (none outside a
 * request, or without a heavy quota).
 * @example heavyAdmissions.run(admission, () => app.handle(request))
 */
export const heavyAdmissions = new AsyncLocalStorage<HeavyAdmission>()
