/**
 * The package (`name@version` when known) that the registry does not have, read from the output of a
 * failed install (npm E404/ETARGET, pnpm and yarn alike); null when the failure is something else.
 */
export function missingPackage(lines: string[]): string | null {
  const text = lines.join('\n');
  const named =
    /(?:No matching version found for |Couldn't find package ")([^\s"]+?)\.?(?=[\s"]|$)/m.exec(text) ??
    /requested resource '([^']+)' could not be found/.exec(text);
  if (named) return named[1];
  for (const line of lines) {
    const url = /\b404\b/.test(line) ? /https?:\/\/[^\s'"]+/.exec(line) : null;
    if (url) return fromUrl(url[0].replace(/:$/, ''));
  }
  return null;
}

// A packument (…/@scope%2fname) or tarball (…/@scope/name/-/name-1.2.3.tgz) URL, on any registry path.
function fromUrl(url: string): string {
  let path: string;
  try {
    path = decodeURIComponent(new URL(url).pathname);
  } catch {
    return url;
  }
  const [where, tarball] = path.split('/-/');
  const parts = where.split('/').filter(Boolean);
  const name =
    parts.length > 1 && parts[parts.length - 2].startsWith('@') ? parts.slice(-2).join('/') : (parts.at(-1) ?? url);
  const base = name.split('/').pop()!;
  return tarball?.startsWith(`${base}-`) && tarball.endsWith('.tgz')
    ? `${name}@${tarball.slice(base.length + 1, -4)}`
    : name;
}
