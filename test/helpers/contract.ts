/**
 * The contract check: every response the tests receive through `call` (test/helpers/stack.ts) must be one the
 * OpenAPI document (api/openapi) describes: a status it lists for that operation, and a body that validates against
 * that status's schema (JSON Schema 2020-12, checked with Ajv). A drift between the API and its document fails the
 * test that saw it, with the route, the status and what did not match.
 */
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import type { ValidateFunction } from 'ajv';
import { openApiDocument } from '../../api/openapi/document.js';

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => void;

interface MediaType {
  schema?: unknown;
}
interface ResponseObject {
  content?: Record<string, MediaType>;
}
interface Route {
  template: string;
  regex: RegExp;
  params: number;
  operations: Record<string, { responses: Record<string, ResponseObject> }>;
}

const DOC_ID = 'edgehub-openapi';
let routes: Route[] | undefined;
let ajv: Ajv2020 | undefined;
const validators = new Map<string, ValidateFunction>();

function setup(): Route[] {
  if (routes) return routes;
  const doc = openApiDocument() as unknown as { paths: Record<string, Route['operations']>; components: unknown };
  ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats(ajv);
  ajv.addSchema({ $id: DOC_ID, components: doc.components });
  routes = Object.entries(doc.paths)
    .map(([template, operations]) => {
      const regex = new RegExp(
        '^' +
          template
            .split(/(\{[^}]+\})/)
            .map((part) => (part.startsWith('{') ? '[^/]+' : part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
            .join('') +
          '$',
      );
      return { template, regex, params: (template.match(/\{/g) ?? []).length, operations };
    })
    // the most literal template wins: `/executions:find` before `/executions/{id}`
    .sort((a, b) => a.params - b.params);
  return routes;
}

function validator(key: string, schema: unknown): ValidateFunction {
  let v = validators.get(key);
  if (!v) {
    const rooted = JSON.parse(JSON.stringify(schema).replaceAll('"#/components/', `"${DOC_ID}#/components/`));
    v = ajv!.compile(rooted);
    validators.set(key, v);
  }
  return v;
}

export interface Observed {
  method: string;
  path: string;
  status: number;
  contentType: string | null;
  json: unknown;
  /** The answer's Edgehub-Error-Code header (error answers carry one; docs/errors.md). */
  errorCode?: string | null;
}

/** Throws when the response is not one the document allows; does nothing for paths the document does not have. */
export function checkContract({ method, path, status, contentType, json, errorCode }: Observed): void {
  const pathname = path.split('?')[0];
  const m = method.toLowerCase();
  const route = setup().find((r) => r.regex.test(pathname) && r.operations[m]);
  if (!route) return; // not an API route (unknown path, bull-board, a test's own server)
  const where = `${method.toUpperCase()} ${route.template} (called as ${pathname})`;
  const responses = route.operations[m].responses;
  const response = responses[String(status)];
  if (!response) {
    throw new Error(
      `OpenAPI contract: ${where} answered ${status}, a status the document does not list for it (it lists ${Object.keys(responses).join(', ')}). Add it in api/openapi/operations/ or fix the route.`,
    );
  }
  const codeHeader = (response as { headers?: Record<string, { schema?: { enum?: string[] } }> }).headers?.['Edgehub-Error-Code'];
  if (codeHeader && errorCode !== undefined) {
    const allowed = codeHeader.schema?.enum;
    if (!errorCode || (allowed && !allowed.includes(errorCode))) {
      throw new Error(
        `OpenAPI contract: ${where} answered ${status} with Edgehub-Error-Code '${errorCode}', the document lists ${allowed?.join(', ') ?? 'any code'}`,
      );
    }
  }
  if (!response.content) return; // no body documented (204)
  const [mediaType, media] = Object.entries(response.content)[0];
  const type = (contentType ?? '').split(';')[0].trim();
  if (mediaType === 'application/json') {
    if (type !== 'application/json')
      throw new Error(`OpenAPI contract: ${where} answered ${status} with content type '${contentType}', the document says application/json`);
    const validate = validator(`${m} ${route.template} ${status}`, media.schema);
    if (!validate(json)) {
      const problems = (validate.errors ?? [])
        .slice(0, 8)
        .map((e) => `${e.instancePath || '(body)'} ${e.message}${e.params && 'additionalProperty' in e.params ? ` '${e.params.additionalProperty}'` : ''}`);
      throw new Error(
        `OpenAPI contract: ${where} answered ${status} with a body that does not match the document's schema:\n  ${problems.join('\n  ')}\n` +
          `body: ${JSON.stringify(json).slice(0, 800)}\nUpdate api/openapi/components/ (or the presenter).`,
      );
    }
  } else if (!type.startsWith(mediaType.split('/')[0]) && mediaType !== 'application/octet-stream') {
    throw new Error(`OpenAPI contract: ${where} answered ${status} with content type '${contentType}', the document says ${mediaType}`);
  }
}
