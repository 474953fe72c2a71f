import aws4 from 'aws4';

/** The key pair a minio client signs with: fields its typings mark protected, which its own presigning reads. */
export interface SigningKeys {
  secretKey: string;
  sessionToken?: string;
}

/** The X-Amz-* parameters of a presigned URL that signing sets; the others (date, expiry) are kept. */
const SIGNING_PARAMS = /^X-Amz-(Algorithm|Credential|SignedHeaders|Signature|Security-Token)$/;

/**
 * `url`, a URL presigned for `method` with Signature Version 4 in its query (as the minio client makes them), signed
 * again with the same access key, scope, date and expiry, but with `headers` signed besides Host: the server then
 * refuses a request whose values of those headers differ. The minio client cannot do this itself: it leaves
 * Content-Length out of every signature it makes. The signing is the `aws4` package's.
 */
export function presignWithHeaders(
  method: string,
  url: string,
  headers: Record<string, string>,
  keys: SigningKeys,
): string {
  const u = new URL(url);
  const credential = u.searchParams.get('X-Amz-Credential') ?? '';
  const [accessKeyId, , region, service] = credential.split('/');
  if (!accessKeyId || !region || service !== 's3' || !u.searchParams.get('X-Amz-Date'))
    throw new Error(`Not a Signature Version 4 presigned S3 URL: ${u.origin}${u.pathname}`);
  const query = new URLSearchParams([...u.searchParams].filter(([name]) => !SIGNING_PARAMS.test(name)));
  const signed = aws4.sign(
    {
      method,
      host: u.host,
      path: `${u.pathname}?${query}`,
      service,
      region,
      signQuery: true,
      headers: { host: u.host, ...headers },
    },
    { accessKeyId, secretAccessKey: keys.secretKey, sessionToken: keys.sessionToken },
  );
  return `${u.protocol}//${u.host}${signed.path}`;
}
