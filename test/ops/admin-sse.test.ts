import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type SseEvent, SseParser } from '../../admin/src/sse.ts';

/** What the admin page's parser makes of a stream that arrives in these chunks. */
function parse(chunks: readonly string[]): { events: SseEvent[]; comments: string[] } {
  const events: SseEvent[] = [];
  const comments: string[] = [];
  const parser = new SseParser(
    (event) => events.push(event),
    (comment) => comments.push(comment),
  );
  for (const chunk of chunks) parser.push(chunk);
  return { events, comments };
}

const created = (id: string, data: string): SseEvent => ({ id, type: 'user.created', data });

const CASES: Array<{ name: string; stream: string; events: SseEvent[]; comments?: string[] }> = [
  {
    name: 'events as the service sends them, after its opening',
    stream:
      'retry: 2000\n: changes after 6\n\nid: 7\nevent: user.created\ndata: {"a":1}\n\nid: 8\nevent: user.created\ndata: {"b":2}\n\n',
    events: [created('7', '{"a":1}'), created('8', '{"b":2}')],
    comments: ['changes after 6'],
  },
  {
    name: 'CRLF line ends',
    stream: 'id: 7\r\nevent: user.created\r\ndata: x\r\n\r\n',
    events: [created('7', 'x')],
  },
  { name: 'CR line ends', stream: 'id: 7\revent: user.created\rdata: x\r\r', events: [created('7', 'x')] },
  {
    name: 'data on several lines, joined by LF; a value without the space after the colon',
    stream: 'id:7\nevent:user.created\ndata: one\ndata:two\n\n',
    events: [created('7', 'one\ntwo')],
  },
  {
    name: 'an id kept for the next event; the type is not',
    stream: 'id: 7\nevent: user.created\ndata: a\n\ndata: b\n\n',
    events: [created('7', 'a'), { id: '7', type: '', data: 'b' }],
  },
  {
    name: 'no event without data, nor an unfinished one',
    stream: 'id: 7\nevent: user.created\n\n: keep-alive\n\nid: 8\ndata: half',
    events: [],
    comments: ['keep-alive'],
  },
  {
    name: 'an id with NUL is ignored; unknown fields too',
    stream: 'id: 7\n\ndata: a\nid: 8\0\nfoo: bar\n\n',
    events: [{ id: '7', type: '', data: 'a' }],
  },
];

describe('the admin page reads Server-Sent Events', () => {
  for (const { name, stream, events, comments = [] } of CASES) {
    it(name, () => {
      assert.deepEqual(parse([stream]), { events, comments }, 'in one chunk');
      // Chunks end anywhere: inside a field, between CR and LF, in the blank line.
      assert.deepEqual(parse([...stream]), { events, comments }, 'a character at a time');
      for (let cut = 1; cut < stream.length; cut++) {
        assert.deepEqual(parse([stream.slice(0, cut), stream.slice(cut)]), { events, comments }, `cut at ${cut}`);
      }
    });
  }
});
