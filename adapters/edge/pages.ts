/** The edge's own 404 page (unknown host, nothing deployed yet, or a missing file without a 404.html). */
export function notFoundPage(): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>Not found</title></head>
<body style="font-family:system-ui,sans-serif;max-width:36rem;margin:4rem auto;padding:0 1rem">
<h1>Not found</h1>
<p>There is nothing here. If you own this project, check its URL and that a deployment has finished.</p>
</body></html>
`;
}

/** The edge's page when a Node.js release does not answer. */
export function badGatewayPage(): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>Bad gateway</title></head>
<body style="font-family:system-ui,sans-serif;max-width:36rem;margin:4rem auto;padding:0 1rem">
<h1>The app is not answering</h1>
<p>This project's app did not answer. If you own it, check its deployment for errors.</p>
</body></html>
`;
}
