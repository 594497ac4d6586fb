// The official `openai` npm client against `servelab sim serve` (argv[2] = base URL, argv[3] = model).
// Exits non-zero with a message on the first failed expectation.
const path = require('path');
const cache = process.env.SERVELAB_CACHE_DIR ||
  path.join(process.env.XDG_CACHE_HOME || path.join(process.env.HOME, '.cache'), 'servelab');
const OpenAI = require(path.join(cache, 'npm/node_modules/openai'));
const [baseURL, model] = process.argv.slice(2);
const client = new OpenAI({ baseURL: baseURL + '/v1', apiKey: 'sk-test', maxRetries: 0 });

function expect(cond, what) {
  if (!cond) { console.error('FAIL: ' + what); process.exit(1); }
}

(async () => {
  const models = await client.models.list();
  expect(models.data.length === 1 && models.data[0].id === model, 'models.list returns the served model');

  const chat = await client.chat.completions.create({
    model, messages: [{ role: 'user', content: 'Hello!' }], max_completion_tokens: 6 });
  expect(chat.choices[0].message.role === 'assistant', 'chat message role');
  expect(chat.usage.completion_tokens === 6, 'chat usage.completion_tokens = max_completion_tokens');
  expect(chat.usage.prompt_tokens > 2, 'chat usage.prompt_tokens counted after the chat template');
  expect(chat.choices[0].finish_reason === 'length', 'finish_reason length');

  const stream = await client.chat.completions.create({
    model, messages: [{ role: 'user', content: 'Stream please' }], max_tokens: 5, stream: true,
    stream_options: { include_usage: true } });
  let text = '', chunks = 0, usage = null;
  for await (const chunk of stream) {
    if (chunk.choices.length > 0) { chunks++; text += chunk.choices[0].delta.content || ''; }
    if (chunk.usage) usage = chunk.usage;
  }
  expect(chunks === 6, 'role chunk + 5 token chunks, got ' + chunks);
  expect(usage && usage.completion_tokens === 5, 'streamed usage chunk');
  expect(text.length > 0, 'streamed text');

  const comp = await client.completions.create({ model, prompt: 'Once upon a time', max_tokens: 4 });
  expect(comp.usage.completion_tokens === 4 && comp.choices[0].text.length > 0, 'completions');

  let status = 0, type = '';
  try {
    await client.chat.completions.create({ model: 'no-such-model', messages: [{ role: 'user', content: 'x' }] });
  } catch (e) { status = e.status; type = e.constructor.name; }
  expect(status === 404 && type === 'NotFoundError', 'unknown model -> 404 NotFoundError, got ' + status + ' ' + type);

  try {
    await client.completions.create({ model, prompt: 'x', max_tokens: 0 });
    status = 200;
  } catch (e) { status = e.status; }
  expect(status === 400, 'max_tokens 0 -> 400, got ' + status);
  console.log('openai client: ok');
})().catch((e) => { console.error('FAIL: ' + (e.stack || e)); process.exit(1); });
