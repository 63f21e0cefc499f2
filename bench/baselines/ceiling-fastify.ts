import Fastify, { type FastifyReply } from 'fastify';

// Ceiling A: the framework alone, a fixed small body for every route the workloads touch.
const BODY = '{"data":[{"name":"Alice","age":"30","city":"Paris"}]}';

const app = Fastify({ logger: false });
const answer = (_request: unknown, reply: FastifyReply) => reply.type('application/json; charset=utf-8').send(BODY);
app.get('/users', answer);
app.post('/users', answer);
app.get('/users/:id', answer);
app.get('/healthz', async () => ({ status: 'ok' }));

await app.listen({ port: Number(process.env.PORT ?? 0), host: '127.0.0.1' });
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => void app.close().finally(() => process.exit(0)));
}
