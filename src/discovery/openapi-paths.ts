import { CONTENT_ANSWER, EVERY_ANSWER, errorResponse, headers, json, pathParameter, ref, type Operation, type OpenApiDeclaration } from '../http/openapi-declarations'
import { CONTENT_TYPES_PATH, LANGUAGES_PATH, TAXONOMIES_PATH, TERMS_PATH } from './routes'
import { ContentTypeList, ContentTypeSummary, Language, LanguageList, Taxonomy, TaxonomyList, TermList, TermSummary } from './schemas'

const answerOf = (description: string, schema: string) => ({ description, headers: headers(...CONTENT_ANSWER), ...json(ref('schemas', schema)) })
const discoveryList = (operationId: string, summary: string, description: string, schema: string): Operation => ({
  operationId,
  tags: ['discovery'],
  summary,
  description,
  parameters: [ref('parameters', 'IfNoneMatch')],
  responses: {
    '200': answerOf('The list, whole.', schema),
    '304': ref('responses', 'NotModified'),
    '500': ref('responses', 'InternalError'),
    '503': ref('responses', 'ServiceUnavailable'),
  },
})

/**
 * The discovery routes in the OpenAPI document (C46): their paths, the lists
 * they answer, and their parameters. Change it with routes.ts.
 * @example discoveryOpenApi().paths['/api/v1/languages']
 */
export function discoveryOpenApi(): OpenApiDeclaration {
  return {
    schemas: {
      Language,
      LanguageList,
      ContentTypeSummary,
      ContentTypeList,
      Taxonomy,
      TaxonomyList,
      TermSummary,
      TermList,
    },
    paths: {
      [LANGUAGES_PATH]: {
        get: discoveryList('listLanguages', 'List the languages', "Every configured language, ordered by code; `is_default` marks the site's default (C46).", 'LanguageList'),
        refusedAs: 'Languages',
      },
      [CONTENT_TYPES_PATH]: {
        get: discoveryList(
          'listContentTypes',
          'List the content types with their live totals',
          'Every content type, ordered by slug, with the number of its live entries: `meta.total` of its list (C18, C46).',
          'ContentTypeList',
        ),
        refusedAs: 'ContentTypes',
      },
      [TAXONOMIES_PATH]: {
        get: discoveryList('listTaxonomies', 'List the taxonomies', 'Every taxonomy (`category`, `tag`, …), ordered by slug (C46).', 'TaxonomyList'),
        refusedAs: 'Taxonomies',
      },
      [TERMS_PATH]: {
        parameters: [ref('parameters', 'Taxonomy')],
        get: {
          operationId: 'listTerms',
          tags: ['discovery'],
          summary: "List a taxonomy's terms with their live totals",
          description:
            'The terms that at least one live entry carries (of `type`, when given), ordered by name then id, each with the number of those entries: ' +
            '`meta.total` of the list filtered by `term={taxonomy}:{slug}` (summed over the types without `type`). A term that only drafts, scheduled or ' +
            'embargoed entries carry is absent, and appears at the second its first entry goes live (C46). `meta.total` counts the terms.',
          parameters: [ref('parameters', 'TermType'), ref('parameters', 'Page'), ref('parameters', 'PerPage'), ref('parameters', 'IfNoneMatch')],
          responses: {
            '200': answerOf('A page of terms; past the last page, `data` is empty.', 'TermList'),
            '304': ref('responses', 'NotModified'),
            '400': ref('responses', 'BadPagination'),
            '404': errorResponse('`type` names no content type (checked first), or the taxonomy does not exist.', ['Content type not found.', 'Taxonomy not found.'], CONTENT_ANSWER),
            '500': ref('responses', 'InternalError'),
            '503': ref('responses', 'ServiceUnavailable'),
          },
        },
        refusedAs: 'Terms',
      },
    },
    parameters: {
      Taxonomy: pathParameter('taxonomy', 'A taxonomy slug (`category`, `tag`, …), as `GET /api/v1/taxonomies` lists them. Case-sensitive.', 'tag'),
      TermType: {
        name: 'type',
        in: 'query',
        description: 'Only the live entries of this content type (case-sensitive, as `{type}`); without it, of every type.',
        example: 'post',
        schema: { type: 'string' },
      },
    },
    responses: {
      BadPagination: errorResponse(
        '`page` or `per_page` is not a positive integer in decimal digits.',
        ['The page parameter must be a positive integer.', 'The per_page parameter must be a positive integer.'],
        [...EVERY_ANSWER, 'Cache-Control'],
      ),
    },
  }
}
