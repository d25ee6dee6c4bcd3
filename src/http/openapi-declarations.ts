import type { ResponseHeaderName } from './response-headers'

/*
 * What a family of routes declares of itself for the OpenAPI document, beside
 * its routes (src/content/openapi-paths.ts, src/changes/openapi-paths.ts, …),
 * and the small pieces it is written with. src/docs/openapi-document.ts puts
 * the declarations together: one place to change when a route changes.
 */

export type Json = Record<string, unknown>

/** The document as its readers use it: paths, then methods, then operations. */
export type OpenApiDocument = Json & { paths: Record<string, Json> }

/** A path's GET: its HEAD (C3) and OPTIONS (C29) operations are made from it when the document is assembled. */
export type Operation = { operationId: string; tags: string[]; summary: string; parameters?: unknown[]; responses: Record<string, Json> } & Json

export interface PathDeclaration {
  /** Parameters of the path itself (`{type}`): the document puts them first in each of its operations. */
  parameters?: unknown[]
  get: Operation
  /**
   * An API path refuses POST, PUT, PATCH and DELETE with a 405 (C3): the
   * document lists each, named by this (`ContentList`: `postContentList`, …).
   */
  refusedAs?: string
}

/**
 * A family's part of the document: its paths, as Elysia writes them
 * (`/api/v1/content/:type`), and the named components they refer to.
 * @example const declaration: OpenApiDeclaration = { paths: { '/healthz': { get } }, schemas: { Status } }
 */
export interface OpenApiDeclaration {
  paths: Record<string, PathDeclaration>
  schemas?: Record<string, unknown>
  parameters?: Record<string, Json>
  responses?: Record<string, Json>
  /** OpenAPI 3.1's top-level `webhooks`: what the service sends (C57). */
  webhooks?: Record<string, Json>
}

export const ref = (kind: 'schemas' | 'parameters' | 'responses' | 'headers', name: string) => ({ $ref: `#/components/${kind}/${name}` })
export const json = (schema: unknown, extra: Json = {}) => ({ content: { 'application/json': { schema, ...extra } } })

/** Headers by kind of answer (C29, C22, C3, C32–C34); `Vary` may carry `Origin` on any answer. */
export const EVERY_ANSWER: ResponseHeaderName[] = ['X-Request-Id', 'Vary']
export const CONTENT_ANSWER: ResponseHeaderName[] = [...EVERY_ANSWER, 'ETag', 'Cache-Control', 'Surrogate-Key', 'X-Cache', 'Age']
export const headers = (...names: ResponseHeaderName[]) => Object.fromEntries(names.map((name) => [name, ref('headers', name)]))

export const errorResponse = (description: string, messages: string[], headerNames: ResponseHeaderName[]) => ({
  description,
  headers: headers(...headerNames),
  ...json(ref('schemas', 'Error'), { examples: Object.fromEntries(messages.map((error, index) => [`error${index + 1}`, { value: { error } }])) }),
})

/**
 * A path parameter, which a path cannot hold empty (`/api/v1/content//x` is another path).
 * Its `example` is one the demo content answers with a 200: the reference page fills it in.
 * @example pathParameter('type', 'A content type slug.', 'post')
 */
export const pathParameter = (name: string, description: string, example: string, extra: Json = {}) => ({
  name,
  in: 'path',
  required: true,
  description,
  example,
  schema: { type: 'string', minLength: 1, ...extra },
})
