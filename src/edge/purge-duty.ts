import { takeDuty, type DutyOptions } from '../db/duty'

/** The advisory lock key of the purge duty: one holder per database, whatever the instances (C51). */
export const PURGE_DUTY_LOCK = 5_105_105_101

/**
 * The purge duty among the instances sharing a database (C51): src/db/duty.ts
 * with the purge's lock.
 * @example const duty = takePurgeDuty(url, { timeoutMs: 5000, log, onTaken, onDropped })
 */
export function takePurgeDuty(url: string, options: Omit<DutyOptions, 'lock' | 'name' | 'applicationName'>): { stop(): Promise<void> } {
  return takeDuty(url, { ...options, lock: PURGE_DUTY_LOCK, name: 'edge purge', applicationName: 'vitrine-purger' })
}
