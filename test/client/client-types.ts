// Compile-time checks of the typed client (client/). Each line marked as an expected error is a
// request the service would refuse: `npm run typecheck` fails when one of them compiles, and
// test/client/client.test.ts compiles this file without the marks and checks each is an error.
import { createUsersClient } from '../../client/index.ts';

const client = createUsersClient('http://127.0.0.1:3000');

export async function refusedAtCompileTime(): Promise<void> {
  // @ts-expect-error age is required to create a record
  await client.POST('/users', { params: { query: { name: 'Ada', city: 'Paris' } } });
  // @ts-expect-error an age is a number, not text
  await client.POST('/users', { params: { query: { name: 'Ada', age: 'old', city: 'Paris' } } });
  // @ts-expect-error an id is a number
  await client.GET('/users/{id}', { params: { path: { id: 'one' } } });
  // @ts-expect-error a query of only names the API does not have
  await client.GET('/users', { params: { query: { colour: 'red' } } });
}

export async function acceptedAtCompileTime(): Promise<number | undefined> {
  const created = await client.POST('/users', { params: { query: { name: 'Ada', age: 36, city: 'Paris' } } });
  const page = await client.GET('/users', { params: { query: { limit: 10, sort: '-age', 'age.gte': 18 } } });
  return created.data?.data[0]?.id ?? page.data?.data.length;
}
