import dns2 from 'dns2';
import type { AddressInfo, Socket } from 'node:net';

const { Packet } = dns2;
// Response codes of RFC 1035 (dns2 has them at run time, its types do not).
const RCODE = { SERVFAIL: 2, NXDOMAIN: 3, REFUSED: 5 };

/** Record types the test zone serves. */
export type RecordType = 'A' | 'TXT' | 'CNAME';

/** How the server answers: from its zone, with SERVFAIL, with REFUSED, or not at all (the client times out). */
export type DnsMode = 'answer' | 'servfail' | 'refused' | 'silent';

/** A real DNS server on loopback (UDP and TCP on one port) whose records a test changes as it goes. */
export interface TestDnsServer {
  /** `127.0.0.1:<port>`, for the dnsServers setting. */
  address: string;
  /** Replaces the records of `type` at `name` (an empty list removes them); a TXT record may be several strings. */
  set(name: string, type: RecordType, values: (string | string[])[]): void;
  /** Removes every record at `name`: it then does not exist (NXDOMAIN). */
  remove(name: string): void;
  mode: DnsMode;
  /** Questions asked so far, as `TYPE name`. */
  asked: string[];
  close(): Promise<void>;
}

const TYPES: Record<number, RecordType> = {
  [Packet.TYPE.A]: 'A',
  [Packet.TYPE.TXT]: 'TXT',
  [Packet.TYPE.CNAME]: 'CNAME',
};
const norm = (name: string) => name.toLowerCase().replace(/\.$/, '');

/** Starts a TestDnsServer on a free loopback port. Records are served with TTL 0, so no resolver keeps them. */
export async function startDnsServer(): Promise<TestDnsServer> {
  const zone = new Map<string, Map<RecordType, (string | string[])[]>>();
  const self: TestDnsServer = {
    address: '',
    mode: 'answer',
    asked: [],
    set(name, type, values) {
      const records = zone.get(norm(name)) ?? new Map<RecordType, (string | string[])[]>();
      if (values.length) records.set(type, values);
      else records.delete(type);
      if (records.size) zone.set(norm(name), records);
      else zone.delete(norm(name));
    },
    remove(name) {
      zone.delete(norm(name));
    },
    close: async () => {},
  };
  const handle: dns2.DnsHandler = (request, send) => {
    const response = Packet.createResponseFromRequest(request);
    const [q] = request.questions;
    const type = TYPES[q.type];
    self.asked.push(`${type ?? q.type} ${norm(q.name)}`);
    if (self.mode === 'silent') return;
    if (self.mode === 'servfail' || self.mode === 'refused') {
      response.header.rcode = self.mode === 'servfail' ? RCODE.SERVFAIL : RCODE.REFUSED;
      void send(response);
      return;
    }
    // Follows CNAMEs the way a recursive resolver does: the chain, then the records asked for.
    let name = norm(q.name);
    for (let hops = 0; hops < 8; hops++) {
      const records = zone.get(name);
      if (!records) {
        if (hops === 0) response.header.rcode = RCODE.NXDOMAIN;
        break;
      }
      const cname = records.get('CNAME');
      if (cname && type !== 'CNAME') {
        response.answers.push({
          name,
          type: Packet.TYPE.CNAME,
          class: Packet.CLASS.IN,
          ttl: 0,
          domain: String(cname[0]),
        } as never);
        name = norm(String(cname[0]));
        continue;
      }
      for (const value of (type && records.get(type)) ?? []) {
        const rdata =
          type === 'A' ? { address: String(value) } : type === 'TXT' ? { data: value } : { domain: String(value) };
        response.answers.push({ name, type: q.type, class: Packet.CLASS.IN, ttl: 0, ...rdata } as never);
      }
      break;
    }
    void send(response);
  };
  for (let attempt = 0; ; attempt++) {
    const udp = dns2.createUDPServer(handle);
    await udp.listen(0, '127.0.0.1');
    const { port } = udp.address() as AddressInfo;
    const tcp = dns2.createTCPServer(handle);
    const sockets = new Set<Socket>();
    tcp.on('connection', (socket: Socket) => {
      sockets.add(socket);
      socket.once('close', () => sockets.delete(socket));
    });
    const listening = await new Promise<boolean>((resolve) => {
      tcp.once('error', () => resolve(false));
      tcp.listen(port, '127.0.0.1', () => resolve(true));
    });
    if (!listening) {
      // Another process holds the TCP side of this port: take another pair.
      udp.close();
      if (attempt < 20) continue;
      throw new Error('no free port for both UDP and TCP');
    }
    self.address = `127.0.0.1:${port}`;
    self.close = async () => {
      await new Promise<void>((resolve) => udp.close(() => resolve()));
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => tcp.close(() => resolve()));
    };
    return self;
  }
}
