// The CopilotKit page of chord/tests/ag_ui_copilotkit.rs: CopilotKit's provider on the runtime
// (server.mjs), a button that starts a run of the `chord` agent through CopilotKit
// (`copilotkit.runAgent({ agent })`, the agent from `useAgent`; `useCoAgent().run` calls
// `runAgent` unbound and throws in 1.74), and the agent's state as `useCoAgent` gives it: the
// plan and the tools as a user sees them, and the whole state as JSON in #state, which the
// test compares with chord's.

import { useEffect, useState } from 'react';
import { createRoot } from 'react-dom/client';
import { CopilotKit, useCoAgent } from '@copilotkit/react-core';
import { useAgent, useCopilotKit } from '@copilotkit/react-core/v2';

const QUESTION = 'What does chord do for AG-UI?';

function ChordRun() {
  const { state } = useCoAgent({ name: 'chord' });
  const { agent, isReady } = useAgent({ agentId: 'chord' });
  const { copilotkit } = useCopilotKit();
  const [status, setStatus] = useState('idle');

  useEffect(() => {
    // A run the agent ended with RUN_ERROR, or CopilotKit's own errors: shown, so the test says why.
    const { unsubscribe } = agent.subscribe({
      onRunErrorEvent: ({ event }) => setStatus(`error: RUN_ERROR ${event.code ?? ''} ${event.message}`),
    });
    const core = copilotkit.subscribe({
      onError: ({ error, code }) => setStatus(`error: ${code ?? ''} ${error?.message ?? error}`),
    });
    return () => {
      unsubscribe();
      core.unsubscribe();
    };
  }, [agent, copilotkit]);

  const ask = async () => {
    setStatus('running');
    agent.addMessage({ id: crypto.randomUUID(), role: 'user', content: QUESTION });
    try {
      await copilotkit.runAgent({ agent });
      setStatus((s) => (s.startsWith('error') ? s : 'done'));
    } catch (error) {
      setStatus(`error: ${error?.stack ?? error}`);
    }
  };

  const answer = agent.messages
    .filter((m) => m.role === 'assistant' && typeof m.content === 'string')
    .map((m) => m.content)
    .join('\n');
  return (
    <main>
      <button id="ask" disabled={!isReady || status !== 'idle'} onClick={ask}>
        Ask
      </button>
      <p id="status">{status}</p>
      <ol id="plan">
        {(state?.plan ?? []).map((step) => (
          <li key={step.title}>
            {step.title}: {step.status}
          </li>
        ))}
      </ol>
      <ul id="tools">
        {(state?.tools ?? []).map((tool) => (
          <li key={tool.id}>
            {tool.name}: <pre>{tool.output}</pre>
          </li>
        ))}
      </ul>
      <p id="answer">{answer}</p>
      <pre id="state">{JSON.stringify(state ?? null)}</pre>
    </main>
  );
}

createRoot(document.getElementById('root')).render(
  <CopilotKit runtimeUrl="/api/copilotkit" useSingleEndpoint agent="chord" showDevConsole={false}>
    <ChordRun />
  </CopilotKit>,
);
