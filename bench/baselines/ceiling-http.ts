import { createServer } from 'node:http';
import { listingBody } from '../seed-data.ts';

// Ceiling B: node:http writing a prebuilt Buffer identical to the full listing; the limit for listing everything.
const body = listingBody(Number(process.env.SEED_RECORDS ?? 0));
const headers = { 'content-type': 'application/json; charset=utf-8', 'content-length': String(body.length) };

createServer((request, response) => {
  if (request.method === 'GET' && request.url === '/users') {
    response.writeHead(200, headers).end(body);
  } else if (request.url === '/healthz') {
    response.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"ok"}');
  } else {
    response.writeHead(404).end();
  }
}).listen(Number(process.env.PORT ?? 0), '127.0.0.1');
