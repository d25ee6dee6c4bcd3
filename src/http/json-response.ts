export const JSON_CONTENT_TYPE = 'application/json; charset=utf-8'

/**
 * A JSON response (C4). The body's type comes from the TypeBox schemas
 * (src/content/schemas.ts) at compile time; at run time, each filter
 * callback's output is checked against its declared shape instead
 * (src/hooks/item-schema.ts), since extensions may reshape items.
 * @example return jsonResponse<ShowBody>({ data: item })
 */
export function jsonResponse<Body>(body: Body, status = 200): Response {
  return new Response(JSON.stringify(body), { status, headers: { 'Content-Type': JSON_CONTENT_TYPE } })
}
