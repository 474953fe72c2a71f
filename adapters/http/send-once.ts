import type { FastifyReply } from 'fastify';

const bodies = new WeakMap<object, ReturnType<FastifyReply['serialize']>>();

/**
 * Sends `answer` as the route's JSON, serialized once however often it is sent: the answers core keeps (`GET /me`,
 * a finished operation's view) come back as the same object, which is never changed once made.
 */
export function sendOnce(reply: FastifyReply, answer: object): FastifyReply {
  let body = bodies.get(answer);
  if (body === undefined) bodies.set(answer, (body = reply.serialize(answer)));
  return reply.type('application/json; charset=utf-8').send(body);
}
