import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Kernel } from '../kernel.js';
import { principalOf } from './auth.js';
import { AGENT_TOOLS, callTool, type ToolCall } from './agent-tool-list.js';
import { publicBase } from './public-base.js';

/** Versions of the Model Context Protocol this endpoint speaks, newest first. */
export const MCP_VERSIONS = ['2025-06-18', '2025-03-26', '2024-11-05'];
/**
 * The largest request body: files sent inline as JSON, parsed on the API's thread, so kept to what parses in tens of
 * milliseconds. A larger site goes through Local-to-Live (a ZIP, streamed).
 */
export const MCP_BODY_BYTES = 16 * 1024 * 1024;

/** JSON-RPC 2.0 error codes. */
const PARSE_ERROR = -32700;
const INVALID_REQUEST = -32600;
const METHOD_NOT_FOUND = -32601;
const INVALID_PARAMS = -32602;
const INTERNAL_ERROR = -32603;

interface RpcRequest {
  jsonrpc: '2.0';
  id?: string | number | null;
  method: string;
  params?: Record<string, unknown>;
}

const isRequest = (body: unknown): body is RpcRequest =>
  typeof body === 'object' &&
  body !== null &&
  !Array.isArray(body) &&
  (body as RpcRequest).jsonrpc === '2.0' &&
  typeof (body as RpcRequest).method === 'string' &&
  ((body as RpcRequest).params === undefined ||
    (typeof (body as RpcRequest).params === 'object' && !Array.isArray((body as RpcRequest).params)));

const ONE_REQUEST =
  'Send one JSON-RPC 2.0 request object ({"jsonrpc": "2.0", "id", "method", "params"}); batches are not supported';

const failure = (id: RpcRequest['id'], code: number, message: string) => ({
  jsonrpc: '2.0',
  id: id ?? null,
  error: { code, message },
});

/** What `method` answers, or a JSON-RPC error. */
async function answer(
  call: ToolCall,
  req: RpcRequest,
): Promise<{ result: unknown } | { error: { code: number; message: string } }> {
  const params = req.params ?? {};
  switch (req.method) {
    case 'initialize': {
      const asked = typeof params.protocolVersion === 'string' ? params.protocolVersion : '';
      return {
        result: {
          protocolVersion: MCP_VERSIONS.includes(asked) ? asked : MCP_VERSIONS[0],
          capabilities: { tools: { listChanged: false } },
          serverInfo: { name: 'hoist', version: '0.1.0' },
          instructions:
            'Hoist deploys static sites and Node.js apps: call deploy_files with a project name and the files; it ' +
            'answers with the operation (status, result.url) once it has ended, or get_operation to follow it.',
        },
      };
    }
    case 'ping':
      return { result: {} };
    case 'tools/list':
      return {
        result: {
          tools: AGENT_TOOLS.map(({ name, description, inputSchema }) => ({ name, description, inputSchema })),
        },
      };
    case 'tools/call': {
      if (typeof params.name !== 'string')
        return { error: { code: INVALID_PARAMS, message: 'params.name is missing' } };
      const args = params.arguments ?? {};
      if (typeof args !== 'object' || args === null || Array.isArray(args))
        return { error: { code: INVALID_PARAMS, message: 'params.arguments must be an object' } };
      const called = await callTool(call, params.name, args as Record<string, unknown>);
      if (called === undefined) return { error: { code: INVALID_PARAMS, message: `Unknown tool ${params.name}` } };
      return { result: called };
    }
    default:
      return { error: { code: METHOD_NOT_FOUND, message: `Method ${req.method} is not supported` } };
  }
}

/**
 * The agent-tool interface as a Model Context Protocol server (Streamable HTTP, stateless): JSON-RPC 2.0 requests
 * POSTed to /agent/v1/mcp, each answered with one JSON response; notifications get 202. Its tools deploy files, list
 * projects and read operations (agent-tool-list.ts). It sits behind the agent-token check of /agent/v1, so REST
 * tokens are refused there as agent tokens are refused by REST. GET (a server-sent event stream) is 405: this server
 * sends nothing unasked.
 */
export async function mcpRoutes(app: FastifyInstance, kernel: Kernel): Promise<void> {
  app.post(
    '/mcp',
    { bodyLimit: MCP_BODY_BYTES, schema: { hide: true } },
    async (req: FastifyRequest, reply: FastifyReply) => {
      const body = req.body;
      if (!isRequest(body))
        return reply
          .status(400)
          .send(failure(null, typeof body === 'object' ? INVALID_REQUEST : PARSE_ERROR, ONE_REQUEST));
      if (body.id === undefined) return reply.status(202).send();
      // Aborted when the connection closes before the answer is sent: a tool waiting for a deploy stops waiting.
      const gone = new AbortController();
      reply.raw.on('close', () => {
        if (!reply.raw.writableFinished) gone.abort();
      });
      try {
        const call = { kernel, principal: principalOf(req), signal: gone.signal, base: publicBase(kernel.config, req) };
        const out = await answer(call, body);
        return { jsonrpc: '2.0', id: body.id, ...out };
      } catch (err) {
        req.log.error({ err, method: body.method }, 'an agent tool call failed');
        return failure(body.id, INTERNAL_ERROR, 'Internal error');
      }
    },
  );
  app.get('/mcp', { schema: { hide: true } }, async (_req, reply) =>
    reply
      .status(405)
      .header('allow', 'POST')
      .send(failure(null, INVALID_REQUEST, 'POST JSON-RPC requests here')),
  );
}
