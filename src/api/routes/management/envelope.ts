import type { FastifyReply } from 'fastify';

/** The management envelope of the spec: `{success, message, data}`. */
export function ok<T>(data: T, message = ''): { success: true; message: string; data: T } {
  return { success: true, message, data };
}

/** A page of a list: the envelope's data is the array; the total goes in X-Total-Count. */
export function okPage<T>(reply: FastifyReply, page: { items: T[]; total: number }) {
  reply.header('x-total-count', String(page.total));
  return ok(page.items);
}
