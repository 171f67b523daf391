// A test reporter that prints one line for a human at the end of `npm test`:
// the names of the failures, the time, and "N passed, N failed, N skipped"
// alone on the last line (the plain closing line CI and people read).
export default async function* summary(source) {
  let passed = 0;
  let failed = 0;
  let skipped = 0;
  let duration = 0;
  const failures = [];
  for await (const event of source) {
    if (event.type === 'test:pass' && event.data.details?.type !== 'suite') {
      if (event.data.skip || event.data.todo) skipped++;
      else passed++;
    } else if (event.type === 'test:fail' && event.data.details?.type !== 'suite') {
      failed++;
      failures.push(`${event.data.file ?? ''}: ${event.data.name}`);
    } else if (event.type === 'test:diagnostic' && /^duration_ms /.test(event.data.message) && event.data.nesting === 0) {
      duration = Number(event.data.message.slice('duration_ms '.length));
    }
  }
  if (failures.length) yield `\nFailed:\n${failures.map((f) => `  ${f}`).join('\n')}\n`;
  yield `\nfolder-mcp tests took ${(duration / 1000).toFixed(1)} s\n${passed} passed, ${failed} failed, ${skipped} skipped\n`;
}
