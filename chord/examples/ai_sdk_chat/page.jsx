// The page of chord/examples/ai_sdk_chat.rs: @ai-sdk/react's useChat with `resume: true` on
// chord-replica/ai-sdk's ChordChatTransport (which resumes a cut stream by itself, after the
// last SSE id), showing each message's text and the run's typed state. The state is
// createChatState()'s: the persistent `data-state` part (the run's whole state, at its start
// and end) with each transient `data-chord` part (chord's batch of ops, one a flush) applied
// to it, read with chord-replica/react's useChord. Bundled by scripts/build-ai-sdk-page into
// page.js beside it.
//
// `?chat=ID` names the chat; without it the page picks an id and puts it in the address, so
// that a reload resumes the same chat (`GET /api/chat/ID/stream`). `window.chordChat` holds
// what the page shows (messages, status, state) and `send(text)`, for tests.

import { useChat } from '@ai-sdk/react';
import { ChordChatTransport, createChatState } from 'chord-replica/ai-sdk';
import { useChord } from 'chord-replica/react';
import { useEffect, useState } from 'react';
import { createRoot } from 'react-dom/client';

function chatId() {
  const url = new URL(window.location.href);
  let id = url.searchParams.get('chat');
  if (!id) {
    id = `chat-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 10)}`;
    url.searchParams.set('chat', id);
    window.history.replaceState(null, '', url);
  }
  return id;
}

/** The text of a message: its text parts, joined. */
function textOf(message) {
  return message.parts.filter((p) => p.type === 'text').map((p) => p.text).join('');
}

const NONE = [];

// Each part of the state is read with its own selector: a component renders when its part
// changed, not on every flush (a token appended to the answer renders only <Answer>).
function Plan({ state }) {
  const plan = useChord(state, (s) => s?.plan ?? NONE);
  return (
    <ol id="plan">
      {plan.map((step, i) => (
        <li key={i} className={step.status}>
          {step.title}: {step.status}
        </li>
      ))}
    </ol>
  );
}

function Tools({ state }) {
  const tools = useChord(state, (s) => s?.tools ?? NONE);
  return tools.map((tool, i) => (
    <div key={i} className="tool">
      <code>$ {tool.command}</code> {tool.done ? '(done)' : '(running)'}
      <pre className="tool-output">{tool.output}</pre>
    </div>
  ));
}

function Answer({ state }) {
  const answer = useChord(state, (s) => s?.answer ?? '');
  return <p id="answer">{answer}</p>;
}

function State({ state }) {
  const question = useChord(state, (s) => s?.question);
  if (question === undefined) return <p id="state">No run yet.</p>;
  return (
    <section id="state">
      <h2>State</h2>
      <p>Question: {question}</p>
      <Plan state={state} />
      <Tools state={state} />
      <h3>Answer</h3>
      <Answer state={state} />
    </section>
  );
}

function App({ id }) {
  // One state per chat: the data-state parts set it, the data-chord batches apply to it.
  const [state] = useState(() => createChatState());
  const [input, setInput] = useState('What does chord do for useChat?');
  const { messages, sendMessage, status, error } = useChat({
    id,
    resume: true,
    transport: new ChordChatTransport({ api: '/api/chat' }),
    onData: state.onData,
  });
  useEffect(() => {
    window.chordChat = {
      id,
      status,
      error: error ? String(error.message ?? error) : null,
      messages: messages.map((m) => ({ id: m.id, role: m.role, text: textOf(m), parts: m.parts })),
      get state() {
        return state.getValue();
      },
      send: (text) => sendMessage({ text }),
    };
  });
  return (
    <main>
      <section id="messages">
        <h2>Chat {id}</h2>
        {messages.map((m) => (
          <div key={m.id} className={`message ${m.role}`}>
            <span className="role">{m.role}</span>
            <span className="text">{textOf(m)}</span>
          </div>
        ))}
        <p id="status">
          {status}
          {error ? `: ${error.message}` : ''}
        </p>
        <form
          onSubmit={(e) => {
            e.preventDefault();
            if (input.trim()) sendMessage({ text: input });
          }}
        >
          <input value={input} onChange={(e) => setInput(e.target.value)} size={40} />
          <button type="submit" disabled={status === 'streaming' || status === 'submitted'}>
            Send
          </button>
        </form>
      </section>
      <State state={state} />
    </main>
  );
}

createRoot(document.getElementById('root')).render(<App id={chatId()} />);
