/** Who a request acts as, once its bearer token is verified. */
export interface Principal {
  userId: string;
  accountId: string;
  email: string;
  /** The token's `jti`: the session of a REST token, the grant id of an agent token. */
  sessionId: string;
}
