import { MODEL_PARTS, type EntryModel, type ModelPart } from './extension'

/**
 * A callback read a part of the model its `reads` do not declare (C54): a
 * programming error, which fails the request closed as a throwing callback does
 * (C23); the message names the callback and the part.
 */
export class UndeclaredReadError extends Error {
  constructor(callbackLabel: string, part: ModelPart, reads: readonly ModelPart[]) {
    super(`${callbackLabel} read content.${part}, which its reads do not declare (reads: [${reads.map((declared) => `'${declared}'`).join(', ')}]): add '${part}' to them.`)
    this.name = 'UndeclaredReadError'
  }
}

/**
 * `reads` as `addFilter` was given it: undefined (the whole model), or parts of MODEL_PARTS.
 * @example checkReads(['terms']) // ['terms']
 */
export function checkReads(reads: unknown): readonly ModelPart[] | null {
  if (reads === undefined) return null
  if (!Array.isArray(reads)) throw new TypeError(`reads must be an array of parts of the model (${MODEL_PARTS.join(', ')}), not ${String(reads)}.`)
  for (const part of reads) {
    if (!(MODEL_PARTS as readonly unknown[]).includes(part)) throw new TypeError(`reads names an unknown part of the model: ${String(part)}. The parts are ${MODEL_PARTS.join(', ')}.`)
  }
  return Object.freeze([...new Set(reads as ModelPart[])])
}

/**
 * What the page's statement loads of each entry's model for these callbacks'
 * declared reads (C54): the parts some callback declares, in MODEL_PARTS'
 * order; every part when a callback declares nothing (null), since it gets the
 * whole model (service.md §6 rule 2).
 * @example partsToLoad([['terms'], []]) // ['terms']
 */
export function partsToLoad(declarations: readonly (readonly ModelPart[] | null)[]): readonly ModelPart[] {
  if (declarations.some((reads) => reads === null)) return MODEL_PARTS
  return MODEL_PARTS.filter((part) => declarations.some((reads) => reads!.includes(part)))
}

/**
 * How one callback sees a model: the model itself when it declares nothing or
 * every part (null here), else a view with the entry's own columns and the parts
 * it declared, whose other parts throw UndeclaredReadError when read — even when
 * another callback's declaration loaded them, so that a callback behaves the
 * same whatever else is installed. The throwing getters sit on one prototype per
 * callback, built here once: a view is a small frozen object, made once per
 * answer and kept with it, never per request.
 * @example const view = modelViewer(['terms'], 'src/hooks/extensions/tags.ts:tags'); view?.(model).fieldValues // throws
 */
export function modelViewer(reads: readonly ModelPart[] | null, callbackLabel: string): ((model: EntryModel) => EntryModel) | null {
  if (reads === null) return null
  const undeclared = MODEL_PARTS.filter((part) => !reads.includes(part))
  if (undeclared.length === 0) return null
  const guard = Object.create(Object.prototype)
  for (const part of undeclared) {
    Object.defineProperty(guard, part, {
      get() {
        throw new UndeclaredReadError(callbackLabel, part, reads)
      },
    })
  }
  Object.freeze(guard)
  const hidden = new Set<string>(undeclared)
  return (model) => {
    const view = Object.create(guard)
    for (const key of Object.keys(model)) if (!hidden.has(key)) view[key] = model[key as keyof EntryModel]
    return Object.freeze(view)
  }
}
