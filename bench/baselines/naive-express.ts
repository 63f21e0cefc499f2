import express from 'express';
import { type SeedRecord, seedRecord } from '../seed-data.ts';

// The contract as a few lines of Express over an array: no validation, no durability. SEED_RECORDS pre-fills it.
const users: SeedRecord[] = Array.from({ length: Number(process.env.SEED_RECORDS ?? 0) }, (_, i) => seedRecord(i + 1));

const app = express();
app.get('/healthz', (_request, response) => {
  response.json({ status: 'ok' });
});
app.get('/users', (_request, response) => {
  response.json({ data: users });
});
app.get('/users/:id', (request, response) => {
  const user = users[Number(request.params.id) - 1];
  if (user === undefined) response.status(404).json({ error: 'not found' });
  else response.json({ data: [user] });
});
app.post('/users', (request, response) => {
  const { name, age, city } = request.query;
  if (typeof name !== 'string' || typeof age !== 'string' || typeof city !== 'string') {
    response.status(400).json({ error: 'name, age and city are required' });
    return;
  }
  const user = { name, age, city };
  users.push(user);
  response.json({ data: [user] });
});

app.listen(Number(process.env.PORT ?? 0), '127.0.0.1');
