// What the CLI prints of a server's lines (build logs, an app's output) cannot drive the reader's terminal.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { printable, printableDeep, printableText } from '../../../../adapters/cli/remote/terminal.js';

test('escape sequences and control characters are left out; text, tabs and other scripts stay', () => {
  const cases: [string, string][] = [
    ['\x1b[31mred\x1b[0m text', 'red text'],
    // Clipboard write (OSC 52) and window title (OSC 0), ended by BEL or by ESC \.
    ['a\x1b]52;c;ZWNobyBwd25lZA==\x07b', 'ab'],
    ['a\x1b]0;owned\x1b\\b', 'ab'],
    // An OSC that never ends takes the rest of the line, not the terminal.
    ['a\x1b]0;never ends', 'a'],
    // Cursor moves and erases, a carriage return that would overwrite, backspaces, a bell, a C1 CSI.
    ['\x1b[2K\x1b[1Fsafe\rhidden\x08\x08\x07\x9b31m', 'safehidden31m'],
    ['\x1bcreset', 'reset'],
    ['tab\there · ünïcode ✓ 漢字', 'tab\there · ünïcode ✓ 漢字'],
    ['a\nb\x00c\x7f', 'abc'],
  ];
  for (const [line, shown] of cases) assert.is(printable(line), shown, JSON.stringify(line));
});

test('printableText keeps the lines of a message; printableDeep cleans every string of an answer, nothing else', () => {
  assert.is(printableText('crashed:\n\x1b]0;x\x07a\r\nb'), 'crashed:\na\nb');
  const answer = { name: 'n\x1b[2K', n: 3, ok: true, none: null, list: ['\x9b1A', { deep: 'd\x07' }] };
  assert.equal(printableDeep(answer), { name: 'n', n: 3, ok: true, none: null, list: ['1A', { deep: 'd' }] });
  assert.is(answer.name, 'n\x1b[2K', 'the answer itself is left as it came');
});

test.run();
