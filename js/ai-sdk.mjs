// chord-replica/ai-sdk: the Vercel AI SDK's `useChat` over chord's AI SDK door (Rust
// `chord::ai_sdk::AiSdk`), with runs that resume where they broke and a typed replica of the
// run's state.
//
//   import { useChat } from '@ai-sdk/react';
//   import { ChordChatTransport, createChatState } from 'chord-replica/ai-sdk';
//   import { useChord } from 'chord-replica/react';
//
//   const transport = new ChordChatTransport({ api: '/api/chat' });
//   const state = createChatState();
//   function Chat() {
//     const { messages, sendMessage } = useChat({ transport, resume: true, onData: state.onData });
//     const answer = useChord(state, (s) => s?.answer); // renders when the answer changed
//     ...
//   }
//
// Nothing here imports `ai` or React: `ai` (7.0.x) is an optional peer dependency, used for
// its types only.

export { ChordChatError, ChordChatTransport, ChordStreamCutError } from './src/ai-sdk-transport.mjs';
export { createChatState, stateOf } from './src/ai-sdk-state.mjs';
