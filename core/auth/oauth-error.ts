/** The error codes of OAuth 2.1, RFC 7591 (registration) and RFC 7009 (revocation) that Hoist answers with. */
export type OAuthErrorCode =
  | 'invalid_request'
  | 'invalid_client'
  | 'invalid_grant'
  | 'unauthorized_client'
  | 'unsupported_grant_type'
  | 'unsupported_response_type'
  | 'access_denied'
  | 'invalid_redirect_uri'
  | 'invalid_client_metadata'
  | 'temporarily_unavailable';

/**
 * An error of the OAuth endpoints: answered as OAuth says, `{error, error_description}` (not Hoist's error body),
 * with `status` (400 unless said), or sent back to the client's redirect URI when the request named a valid one.
 */
export class OAuthError extends Error {
  constructor(
    readonly error: OAuthErrorCode,
    readonly description: string,
    readonly status = 400,
  ) {
    super(description);
  }
}
