// Checks real responses against the API description: the documented status, body schema (closed objects, so an
// undocumented field fails) and headers. Used by the drift hook every test file runs and by the openapi tests.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Ajv2020, { type AnySchema, type ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { openApiDocument } from '../../server/openapi/document';

/** The parts of the API description this checker reads. */
interface ResponseObject {
  headers?: Record<string, unknown>;
  content?: Record<string, unknown>;
}
interface Json {
  components: unknown;
  paths: Record<string, Record<string, { responses: Record<string, ResponseObject | undefined> } | undefined> | undefined>;
}

const DOCUMENT_ID = 'kya-openapi';
/** Headers the description promises per response: seeing one a response does not list is drift. */
const TRACKED_HEADERS = ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset', 'x-quota-limit', 'x-quota-used', 'x-quota-reset', 'retry-after'];

let ajv: Ajv2020 | null = null;
const compiled = new Map<string, ValidateFunction>();
let routes: Array<{ template: string; re: RegExp }> | null = null;

const DOCUMENT_FILE_ENV = 'KYA_TEST_OPENAPI_FILE';
let cachedDocument: Json | null = null;

/** Writes the description once per test run (global setup); test files read it instead of rebuilding it. */
export function writeDocumentForTests(): void {
  const file = path.join(os.tmpdir(), 'kya-openapi-test.json');
  fs.writeFileSync(file, JSON.stringify(openApiDocument()));
  process.env[DOCUMENT_FILE_ENV] = file;
}

function document(): Json {
  if (!cachedDocument) {
    const file = process.env[DOCUMENT_FILE_ENV];
    cachedDocument = file && fs.existsSync(file) ? (JSON.parse(fs.readFileSync(file, 'utf8')) as Json) : (openApiDocument() as unknown as Json);
  }
  return cachedDocument;
}

/** One response schema, compiled on its own against the shared components (never the whole document). */
function validatorFor(pointer: string): ValidateFunction {
  if (!ajv) {
    ajv = new Ajv2020({ strict: false, allErrors: true, validateSchema: false });
    addFormats(ajv);
    ajv.addSchema({ $id: DOCUMENT_ID, components: document().components }, DOCUMENT_ID);
  }
  let fn = compiled.get(pointer);
  if (!fn) {
    const schema = pointer
      .slice(1)
      .split('/')
      .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'))
      .reduce<unknown>((node, key) => (node as Record<string, unknown>)[key], document());
    fn = ajv.compile(JSON.parse(JSON.stringify(schema).replace(/"#\/components\//g, `"${DOCUMENT_ID}#/components/`)) as AnySchema);
    compiled.set(pointer, fn);
  }
  return fn;
}

const escape = (s: string) => s.replace(/~/g, '~0').replace(/\//g, '~1');

/** The documented path template a concrete path belongs to, or null (pages, metrics, assets). */
export function templateOf(path: string): string | null {
  routes ??= Object.keys(document().paths)
    .map((template) => ({ template, re: new RegExp(`^${template.replace(/\{[^}]+\}/g, '[^/]+')}$`) }))
    // Literal paths before templated ones: /v1/credentials/wallets is not /v1/credentials/{id}.
    .sort((a, b) => a.template.split('{').length - b.template.split('{').length);
  return routes.find((r) => r.re.test(path))?.template ?? null;
}

export interface ObservedResponse {
  method: string;
  path: string;
  status: number;
  headers: Record<string, unknown>;
  body: unknown;
}

/** Problems with one response; empty when the description covers it exactly. Null when the path is not an API path. */
export function checkResponse(r: ObservedResponse): string[] | null {
  const template = templateOf(r.path.split('?')[0]);
  if (!template) return null;
  const where = `${r.method.toUpperCase()} ${template} ${r.status}`;
  const op = document().paths[template]?.[r.method.toLowerCase()];
  if (!op) return r.status === 404 || r.status === 405 ? [] : [`${where}: method not documented`];
  const response = op.responses[String(r.status)];
  if (!response) return [`${where}: status not documented (body ${JSON.stringify(r.body).slice(0, 200)})`];
  const problems: string[] = [];
  const documentedHeaders = new Set(Object.keys(response.headers ?? {}).map((k) => k.toLowerCase()));
  for (const name of TRACKED_HEADERS) {
    if (r.headers[name] !== undefined && !documentedHeaders.has(name)) problems.push(`${where}: header ${name} not documented`);
  }
  if (response.content?.['application/json']) {
    const pointer = `/paths/${escape(template)}/${r.method.toLowerCase()}/responses/${r.status}/content/application~1json/schema`;
    const validate = validatorFor(pointer);
    if (!validate(r.body)) {
      const errors = (validate.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message}${e.params ? ' ' + JSON.stringify(e.params) : ''}`);
      problems.push(`${where}: ${errors.slice(0, 5).join('; ')} (body ${JSON.stringify(r.body).slice(0, 300)})`);
    }
  } else if (r.body !== undefined && r.body !== '' && r.body !== null) {
    problems.push(`${where}: body not documented`);
  }
  return problems;
}
