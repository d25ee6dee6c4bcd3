export const JSON_CONTENT_TYPE = 'application/json; charset=utf-8'

/**
 * A JSON response (C4). Routes build their own instead of letting Elysia
 * check the body against the response schema on every request: the schema
 * types the body at compile time and documents it, and extensions may reshape
 * items at run time (service.md §6).
 * @example return jsonResponse<typeof ShowResponse.static>({ data: item })
 */
export function jsonResponse<Body>(body: Body, status = 200): Response {
  return new Response(JSON.stringify(body), { status, headers: { 'content-type': JSON_CONTENT_TYPE } })
}
