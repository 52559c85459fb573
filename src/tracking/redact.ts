/**
 * Tracking URIs as messages and logs may show them: without the credentials a driver would read from
 * them. `pg` reads a password from the userinfo (`postgresql://u:p@h/db`) and from the query
 * (`?password=…`, any parameter of libpq's, e.g. `sslpassword`); MLflow's REST client from the userinfo.
 * The userinfo is dropped whole; a query parameter whose name looks like a credential keeps its name and
 * shows `***` for its value.
 */

/** Query parameter names that carry credentials in the URIs Tagger's drivers read (case-insensitive). */
const SECRET_PARAMETER = /pass|pwd|secret|token|key|auth|cred|sig/i;

/** The name of a query parameter as a driver decodes it (`pass%77ord` is `password`); null if it cannot be. */
function decodedName(name: string): string | null {
  try {
    return decodeURIComponent(name.replace(/\+/g, ' '));
  } catch {
    return null;
  }
}

/**
 * The query (`a=1&password=x`) with every credential's value masked: `a=1&password=***`. A parameter
 * whose name cannot be decoded is masked too, name and all.
 */
export function maskQuery(query: string): string {
  return query
    .split('&')
    .map((part) => {
      const equals = part.indexOf('=');
      const name = equals < 0 ? part : part.slice(0, equals);
      const decoded = decodedName(name);
      if (decoded === null) return '***';
      return equals >= 0 && SECRET_PARAMETER.test(decoded) ? `${name}=***` : part;
    })
    .join('&');
}

const SCHEME = /^[a-zA-Z][a-zA-Z0-9+.-]*:\/\//;

/**
 * An absolute file path in text — alone, after a space, quote, bracket or `=`, or as the path of a
 * `scheme:///` URI — up to its last part. URLs with a host (`s3://b/k`, `http://h/p`) and model URIs
 * (`models:/m/1`) are not paths.
 */
const ABSOLUTE_PATH = /(^|[\s('"=]|[a-z][a-z0-9+.-]*:\/\/\/)((?:\/[^\s/\\:;,()'"]+)+)\/([^\s/\\:;,()'"]+)/gi;

/**
 * Text with every absolute path's folders masked as `…`, as credentials are masked: what a server
 * shows its callers names the file, not where the server keeps it.
 * @example maskPaths('records: cannot write sqlite:////var/lib/tagger/mlflow.db') // 'records: cannot write sqlite:///…/mlflow.db'
 */
export function maskPaths(text: string): string {
  return text.replace(ABSOLUTE_PATH, '$1…/$3');
}

/**
 * The URI without credentials, for messages and logs: the userinfo removed
 * (`scheme://user:password@host` → `scheme://host`) and credential query parameters masked
 * (`?password=…` → `?password=***`), the fragment dropped. A password typed with an unencoded `/` or
 * `#` still counts as userinfo: everything up to the last `@` before the query is dropped.
 * @example redactUri('postgresql://u@db:5432/mlflow?password=s3cret') // 'postgresql://db:5432/mlflow?password=***'
 */
export function redactUri(uri: string): string {
  const scheme = SCHEME.exec(uri)?.[0];
  if (scheme === undefined) return uri;
  let rest = uri.slice(scheme.length);
  const query = rest.indexOf('?');
  const beforeQuery = query < 0 ? rest : rest.slice(0, query);
  const at = beforeQuery.lastIndexOf('@');
  if (at >= 0) rest = rest.slice(at + 1);
  // A fragment means nothing to any driver, and may be the tail of a password with an unencoded `#`.
  const hash = rest.indexOf('#');
  if (hash >= 0) rest = rest.slice(0, hash);
  const start = rest.indexOf('?');
  if (start < 0) return scheme + rest;
  return `${scheme}${rest.slice(0, start)}?${maskQuery(rest.slice(start + 1))}`;
}
