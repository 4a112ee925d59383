/**
 * Routes read from the gateway's own OpenAPI document (/openapi.json), so the fuzz and fault tests cover a route
 * added later without anyone adding it to a list.
 */

/** The part of JSON Schema the tests read. */
export type JsonSchema = {
  type?: string | string[];
  format?: string;
  enum?: unknown[];
  const?: unknown;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  items?: JsonSchema;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  minimum?: number;
};
type Schema = JsonSchema;
type Operation = { requestBody?: { content?: Record<string, { schema?: Schema }> }; parameters?: Array<{ in: string; name: string }> };
export type OpenApiDoc = { paths: Record<string, Record<string, Operation>> };

export interface DocumentedRoute {
  method: string;
  /** The path as documented, with `{param}` placeholders. */
  path: string;
  /** Content types of its request body, if it has one. */
  contentTypes: string[];
  /** Its JSON body schema, if it takes JSON. */
  jsonSchema?: Schema;
}

export interface UploadRoute {
  path: string;
  /** The first file field of its form (a string of format `binary`). */
  fileField: string;
  /** Plausible values of its required text fields. */
  textFields: Record<string, string>;
}

export function documentedRoutes(doc: OpenApiDoc): DocumentedRoute[] {
  const routes: DocumentedRoute[] = [];
  for (const [path, ops] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(ops)) {
      const content = op.requestBody?.content ?? {};
      routes.push({ method: method.toUpperCase(), path, contentTypes: Object.keys(content), jsonSchema: content['application/json']?.schema });
    }
  }
  return routes;
}

/** A value a text field of a form would plausibly carry. */
function sampleText(name: string, schema: Schema): string {
  if (schema.enum?.length) return String(schema.enum[0]);
  const alternatives = schema.anyOf ?? [schema];
  if (alternatives.some((s) => s.type === 'integer' || s.type === 'number')) return String(alternatives.find((s) => s.minimum !== undefined)?.minimum ?? 1);
  return name === 'model' ? 'gpt-4o' : `a ${name}`;
}

export function multipartRoutes(doc: OpenApiDoc): UploadRoute[] {
  const uploads: UploadRoute[] = [];
  for (const [path, ops] of Object.entries(doc.paths)) {
    for (const op of Object.values(ops)) {
      const schema = op.requestBody?.content?.['multipart/form-data']?.schema;
      if (!schema?.properties) continue;
      const entries = Object.entries(schema.properties);
      const file = entries.find(([, s]) => s.format === 'binary');
      if (!file) continue;
      const textFields: Record<string, string> = {};
      for (const [name, s] of entries) if (s.format !== 'binary' && (schema.required ?? []).includes(name)) textFields[name] = sampleText(name, s);
      uploads.push({ path, fileField: file[0], textFields });
    }
  }
  return uploads;
}
