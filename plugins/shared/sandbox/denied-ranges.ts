/**
 * IPv4 ranges tenant code never reaches, whatever the configuration adds: loopback, link-local
 * (cloud metadata), the private and shared ranges where Hoist's own services live (PostgreSQL,
 * NATS, S3, Docker), "this network" and multicast. The npm registry is let through even there.
 */
export const DENIED_RANGES = [
  '0.0.0.0/8',
  '10.0.0.0/8',
  '100.64.0.0/10',
  '127.0.0.0/8',
  '169.254.0.0/16',
  '172.16.0.0/12',
  '192.168.0.0/16',
  '224.0.0.0/3',
];
