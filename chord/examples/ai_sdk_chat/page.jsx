// The page of chord/examples/ai_sdk_chat.rs: @ai-sdk/react's useChat with `resume: true` on the
// AI SDK's default transport, showing each message's text and the run's typed state. The
// state is the persistent `data-state` part (the run's whole state, at its start and end)
// with each transient `data-chord` part (chord's batch of ops, one a flush) applied to it by
// chord-replica's `apply`. Bundled by scripts/build-ai-sdk-page into page.js beside it.
//
// `?chat=ID` names the chat; without it the page picks an id and puts it in the address, so
// that a reload resumes the same chat (`GET /api/chat/ID/stream`). `window.chordChat` holds
// what the page shows (messages, status, state) and `send(text)`, for tests.

import { useChat } from '@ai-sdk/react';
import { DefaultChatTransport } from 'ai';
import { apply } from 'chord-replica';
import { useEffect, useMemo, useState } from 'react';
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

function Plan({ plan }) {
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

function State({ state }) {
  if (!state) return <p id="state">No run yet.</p>;
  return (
    <section id="state">
      <h2>State</h2>
      <p>Question: {state.question}</p>
      <Plan plan={state.plan ?? []} />
      {(state.tools ?? []).map((tool, i) => (
        <div key={i} className="tool">
          <code>$ {tool.command}</code> {tool.done ? '(done)' : '(running)'}
          <pre className="tool-output">{tool.output}</pre>
        </div>
      ))}
      <h3>Answer</h3>
      <p id="answer">{state.answer}</p>
    </section>
  );
}

function App({ id }) {
  const [live, setLive] = useState(undefined);
  const [input, setInput] = useState('What does chord do for useChat?');
  const transport = useMemo(() => new DefaultChatTransport({ api: '/api/chat' }), []);
  const { messages, sendMessage, status, error } = useChat({
    id,
    resume: true,
    transport,
    onData: (part) => {
      if (part.type === 'data-state') setLive(part.data);
      else if (part.type === 'data-chord') setLive((state) => apply(state, part.data));
    },
  });
  // The state as the last assistant message holds it when the page did not see it live.
  const last = messages.findLast((m) => m.role === 'assistant');
  const kept = last?.parts.findLast((p) => p.type === 'data-state')?.data;
  const state = live ?? kept;
  useEffect(() => {
    window.chordChat = {
      id,
      status,
      error: error ? String(error.message ?? error) : null,
      messages: messages.map((m) => ({ id: m.id, role: m.role, text: textOf(m), parts: m.parts })),
      state,
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
        <p id="status">{status}{error ? `: ${error.message}` : ''}</p>
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
