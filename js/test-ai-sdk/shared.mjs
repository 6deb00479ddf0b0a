// What the scripts chord/tests/ai_sdk_clients.rs drives share: a useChat body, the SSE of a
// response read whole, each chunk checked against the AI SDK's own schema, the chat as the
// AI SDK's `Chat` keeps it, and the state as a page keeps it from the data parts.

import assert from 'node:assert/strict';

import { DefaultChatTransport, uiMessageChunkSchema } from 'ai';
import { Chat } from '@ai-sdk/react';
import { EventParser, apply } from 'chord-replica';
import { ChordChatTransport, createChatState } from 'chord-replica/ai-sdk';

export const QUESTION = 'What does chord do for useChat?';

/** The body `DefaultChatTransport` posts for a first user message in chat `id`. */
export function chatBody(id, text = QUESTION) {
  return {
    id,
    messages: [{ id: `${id}-u1`, role: 'user', parts: [{ type: 'text', text }] }],
    trigger: 'submit-message',
    messageId: undefined,
  };
}

/** A response's SSE events, read to the end: `{ id, data }` each. */
export async function readEvents(response) {
  const parser = new EventParser();
  const events = [];
  for await (const chunk of response.body) {
    for (const { id, data } of parser.push(chunk)) events.push({ id, data });
  }
  return events;
}

// The AI SDK's schema is made of zod's `looseObject`s: a member it does not know passes it.
// These are the members each chunk type chord sends may have, from the same schema's source
// (ai/dist/index.js, `uiMessageChunkSchema`), so that an extra member fails too.
const MEMBERS = {
  start: ['type', 'messageId', 'messageMetadata'],
  'text-start': ['type', 'id', 'providerMetadata'],
  'text-delta': ['type', 'id', 'delta', 'providerMetadata'],
  'text-end': ['type', 'id', 'citations', 'providerMetadata'],
  finish: ['type', 'finishReason', 'messageMetadata'],
  error: ['type', 'errorText'],
  abort: ['type', 'reason'],
  data: ['type', 'id', 'data', 'transient'],
};

const schema = uiMessageChunkSchema();

/** Parses an event's data as a chunk, which the AI SDK's own schema must accept. */
export async function checkChunk(data, where) {
  let chunk;
  assert.doesNotThrow(() => (chunk = JSON.parse(data)), `${where}: not JSON: ${data}`);
  const result = await schema.validate(chunk);
  assert.ok(result.success, `${where}: the AI SDK's uiMessageChunkSchema refuses ${data}: ${result.error}`);
  const kind = chunk.type.startsWith('data-') ? 'data' : chunk.type;
  const members = MEMBERS[kind];
  assert.ok(members, `${where}: a chunk of type ${chunk.type}, which chord does not send`);
  for (const key of Object.keys(chunk)) assert.ok(members.includes(key), `${where}: ${chunk.type} has member ${key}, not in the schema`);
  return chunk;
}

/** GETs `url` as JSON, failing on any status but 200. */
export async function getJson(url) {
  const response = await fetch(url);
  const text = await response.text();
  assert.equal(response.status, 200, `GET ${url}: ${response.status} ${text}`);
  return JSON.parse(text);
}

/** The text of a UI message: its text parts, joined. */
export function textOf(message) {
  return message.parts.filter((p) => p.type === 'text').map((p) => p.text).join('');
}

/**
 * A `fetch` that records each request (`{ method, url, headers }`) and each event-stream
 * response's events as the client read them (`{ status, events: [{ id, data }] }`), in `log`.
 */
export function recordingFetch(log) {
  return async (input, init) => {
    const entry = { method: init?.method ?? 'GET', url: String(input), headers: Object.fromEntries(new Headers(init?.headers)), events: [] };
    log.push(entry);
    const response = await fetch(input, init);
    entry.status = response.status;
    if (!(response.headers.get('content-type') ?? '').startsWith('text/event-stream')) return response;
    const parser = new EventParser();
    const body = response.body.pipeThrough(
      new TransformStream({
        transform(chunk, controller) {
          for (const event of parser.push(chunk)) entry.events.push(event);
          controller.enqueue(chunk);
        },
      }),
    );
    return new Response(body, { status: response.status, headers: response.headers });
  };
}

/**
 * `@ai-sdk/react`'s `Chat` (the class `useChat` holds) at `api`, on the AI SDK's
 * `DefaultChatTransport` (`transport` `'default'`) or on chord-replica/ai-sdk's
 * `ChordChatTransport` (`'chord'`, resuming cuts by itself), with the state a page keeps:
 * the persistent `data-state` part, then each transient `data-chord` batch applied to it
 * (`live.state`; with `'chord'` also `createChatState()`'s, `live.chatState`), and every data
 * part seen (`live.data`).
 */
export function makeChat(id, api, log = [], transport = 'default') {
  const live = { state: undefined, data: [] };
  const fetch = recordingFetch(log);
  let onData = () => {};
  let made;
  if (transport === 'chord') {
    // Quick retries: the tests' server is down for a moment at most.
    made = new ChordChatTransport({ api, fetch, retry: { attempts: 60, delay: 20, maxDelay: 250 } });
    live.chatState = createChatState();
    onData = live.chatState.onData;
  } else {
    made = new DefaultChatTransport({ api, fetch });
  }
  const chat = new Chat({
    id,
    transport: made,
    onData: (part) => {
      live.data.push(part);
      if (part.type === 'data-state') live.state = part.data;
      else if (part.type === 'data-chord') live.state = apply(live.state, part.data);
      onData(part);
    },
  });
  return { chat, live, log };
}

/** Waits `ms` milliseconds. */
export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * A finished chat's one assistant message, checked: no part twice (one text part, one
 * `data-state`, no transient part kept), its text the state's `answer`, its `data-state`
 * the state `GET {api}/{id}/state` answers, and the page's state that one too.
 */
export async function checkChat(name, { chat, live }, api, { answer, runId }) {
  const assistant = chat.messages.filter((m) => m.role === 'assistant');
  assert.equal(assistant.length, 1, `${name}: ${assistant.length} assistant messages: ${JSON.stringify(chat.messages)}`);
  const [message] = assistant;
  if (runId) assert.equal(message.id, runId, `${name}: the message's id is not the run's`);
  const types = message.parts.map((p) => p.type);
  assert.equal(types.filter((t) => t === 'text').length, 1, `${name}: text parts ${JSON.stringify(types)}`);
  assert.equal(types.filter((t) => t === 'data-state').length, 1, `${name}: data-state parts ${JSON.stringify(types)}`);
  assert.ok(!types.includes('data-chord'), `${name}: a transient part was kept: ${JSON.stringify(types)}`);
  const state = await getJson(`${api}/${encodeURIComponent(chat.id)}/state`);
  const text = textOf(message);
  if (answer !== undefined) assert.equal(text, answer, `${name}: the message's text is not the answer`);
  assert.equal(text, state.answer, `${name}: the message's text is not the state's answer`);
  assert.deepEqual(message.parts.find((p) => p.type === 'data-state').data, state, `${name}: the message's data-state is not GET .../state`);
  assert.deepEqual(live.state, state, `${name}: the page's state (data-state and data-chord parts) is not GET .../state`);
  if (live.chatState) assert.deepEqual(live.chatState.getValue(), state, `${name}: createChatState's value is not GET .../state`);
  return { message, state, text };
}
