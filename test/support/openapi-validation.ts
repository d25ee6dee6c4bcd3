import Ajv2020 from 'ajv/dist/2020'
import addFormats from 'ajv-formats'

const DOCUMENT_ID = 'https://vitrine.test/openapi.json'

/** Escapes a JSON pointer token: `/api/v1/content/{type}` → `~1api~1v1~1content~1{type}`. */
const token = (text: string) => text.replaceAll('~', '~0').replaceAll('/', '~1')

/**
 * Checks answers against an OpenAPI 3.1 document with Ajv's JSON Schema
 * 2020-12 validator, which shares no code with the TypeBox schemas the
 * document is built from. Returns what is wrong; an empty list when nothing is.
 * @example const problems = documentChecker(document)('get', '/api/v1/content/{type}', response)
 */
export function documentChecker(document: Record<string, any>) {
  const ajv = new Ajv2020({ strict: false, allErrors: true })
  addFormats(ajv)
  ajv.addSchema({ ...document, $id: DOCUMENT_ID })
  const resolve = (value: any): any => {
    if (value?.$ref === undefined) return value
    return resolve((value.$ref as string).slice(2).split('/').reduce((node: any, part: string) => node[part.replaceAll('~1', '/').replaceAll('~0', '~')], document))
  }
  const validatorAt = (pointer: string) => {
    const validate = ajv.getSchema(`${DOCUMENT_ID}#${pointer}`)
    if (!validate) throw new Error(`No schema at ${pointer}`)
    return validate
  }

  /**
   * C57: what the document says an endpoint receives as `webhook` (its top-level `webhooks`), checked against a
   * message received.
   */
  check.webhook = (webhook: string, message: unknown): string[] => {
    if (!document.webhooks?.[webhook]) return [`the webhook ${webhook} is not documented`]
    const validate = validatorAt(`/webhooks/${token(webhook)}/post/requestBody/content/application~1json/schema`)
    return validate(message) ? [] : [`${webhook}: ${ajv.errorsText(validate.errors)}`]
  }
  return check

  function check(method: string, path: string, response: { status: number; headers: Headers; text: string }): string[] {
    const operation = document.paths[path]?.[method]
    if (!operation) return [`${method} ${path} is not documented`]
    const status = String(response.status)
    if (!(status in operation.responses)) return [`${method} ${path} answered ${status}, which is not documented`]
    const responseObject = resolve(operation.responses[status])
    const problems: string[] = []
    const pointer = (responseObject === operation.responses[status] ? `/paths/${token(path)}/${method}/responses/${status}` : operation.responses[status].$ref.slice(1)) + '/content/application~1json/schema'
    const validateBody = validatorAt(pointer)
    if (!validateBody(JSON.parse(response.text))) problems.push(`body: ${ajv.errorsText(validateBody.errors)}`)
    for (const [name, reference] of Object.entries<any>(responseObject.headers ?? {})) {
      const header = resolve(reference)
      const value = response.headers.get(name)
      if (value === null) {
        if (header.required) problems.push(`header ${name} is required and missing`)
        continue
      }
      const typed = header.schema.type === 'integer' && /^\d+$/.test(value) ? Number(value) : value
      const validateHeader = validatorAt(`${(reference.$ref as string).slice(1)}/schema`)
      if (!validateHeader(typed)) problems.push(`header ${name}: ${ajv.errorsText(validateHeader.errors)}`)
    }
    return problems
  }
}
