/**
 * The encoding of data files (src/model/data-files/encoding.ts): UTF-8 with or without a byte-order mark
 * and UTF-16 with one read right, whole or in chunks cut anywhere; anything else refused with a message
 * naming the line, the byte and what the file looks like, and read with the encoding given.
 */
import { describe, expect, it } from 'vitest';
import {
  decodeText,
  encodingOf,
  firstInvalidUtf8,
  TextEncodingError,
  TextStreamDecoder,
} from '../../../src/model/index.js';

const TEXT = 'title,description,tag\nCafé au lait,naïve Bayes — « ok »,nlp\n日本語のテキスト,😀,cv\n';
const utf8 = new TextEncoder().encode(TEXT);
const withBom = (bom: number[], body: Uint8Array) => new Uint8Array([...bom, ...body]);
function utf16(text: string, endian: 'le' | 'be'): Uint8Array {
  const out = new Uint8Array(text.length * 2);
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    out[2 * i + (endian === 'le' ? 0 : 1)] = code & 0xff;
    out[2 * i + (endian === 'le' ? 1 : 0)] = code >> 8;
  }
  return out;
}
/** Windows-1252 bytes of a Latin-1 text (every character below U+0100). */
const latin1 = (text: string) => Uint8Array.from(text, (ch) => ch.charCodeAt(0));

/** Decodes `bytes` in chunks of `size` through the stream decoder, as a file read in pieces. */
function streamed(bytes: Uint8Array, size: number, encoding?: string): string {
  const decoder = new TextStreamDecoder('f.csv', encoding);
  const parts: Uint8Array[] = [];
  for (let at = 0; at < bytes.length; at += size) parts.push(decoder.push(bytes.subarray(at, at + size)));
  parts.push(decoder.end());
  return Buffer.concat(parts).toString('utf8');
}

describe('decodeText', () => {
  it.each([
    ['UTF-8', utf8, 'utf-8'],
    ['UTF-8 with a byte-order mark', withBom([0xef, 0xbb, 0xbf], utf8), 'utf-8'],
    ['UTF-16LE with a byte-order mark', withBom([0xff, 0xfe], utf16(TEXT, 'le')), 'utf-16le'],
    ['UTF-16BE with a byte-order mark', withBom([0xfe, 0xff], utf16(TEXT, 'be')), 'utf-16be'],
  ])('reads %s as it is, the mark dropped', (_, bytes, encoding) => {
    expect(decodeText(bytes, 'f.csv')).toEqual({ text: TEXT, encoding });
  });

  it('refuses Latin-1 bytes, naming the line, the byte, what it looks like and the flag', () => {
    const bytes = latin1('title,description,tag\nplain,row,nlp\nCafé crème,x,nlp\n');
    let error: unknown;
    try {
      decodeText(bytes, 'latin1.csv');
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(TextEncodingError);
    expect((error as Error).message).toBe(
      'latin1.csv is not UTF-8: line 3 has byte 0xE9, which UTF-8 does not allow there — the file is in another encoding, most likely Latin-1 / Windows-1252; as Latin-1 (Windows-1252) it reads "Café crème,x,nlp". Read it with --encoding latin1 (or the encoding it is in: --encoding <name>), or save it as UTF-8',
    );
    // Read as what it is: every accented letter kept (before: "Caf\uFFFD cr\uFFFDme").
    expect(decodeText(bytes, 'latin1.csv', 'latin1').text).toContain('Café crème');
    expect(
      decodeText(
        latin1('€ “quoted”'.replace('€', '\x80').replace('“', '\x93').replace('”', '\x94')),
        'w.csv',
        'windows-1252',
      ).text,
    ).toBe('€ “quoted”');
  });

  it('says when the file looks like UTF-16 without a byte-order mark', () => {
    expect(() => decodeText(new Uint8Array([...utf16('title,tag\n', 'le'), 0xd8, 0x00]), 'u.csv')).toThrow(
      /u\.csv is not UTF-8: it looks like UTF-16 without a byte-order mark .*--encoding utf-16le/,
    );
    // Given, it is read.
    expect(decodeText(utf16('title,tag\n', 'le'), 'u.csv', 'utf-16le').text).toBe('title,tag\n');
  });

  it('refuses an unknown encoding, and bytes the given Unicode encoding cannot read', () => {
    expect(() => encodingOf('klingon')).toThrow(
      /unknown encoding 'klingon'; give a label of the Encoding Standard, e\.g\. utf-8, latin1/,
    );
    expect(encodingOf('latin1')).toBe('windows-1252');
    expect(encodingOf(' UTF-16LE ')).toBe('utf-16le');
    expect(() => decodeText(latin1('café'), 'f.csv', 'utf-8')).toThrow(
      /f\.csv is not valid utf-8; check --encoding/,
    );
  });
});

describe('firstInvalidUtf8', () => {
  it.each([
    ['ASCII', [0x61, 0x62], -1],
    ['a 4-byte character', [0xf0, 0x9f, 0x98, 0x80], -1],
    ['a stray continuation byte', [0x61, 0x80], 1],
    ['an overlong form of /', [0xc0, 0xaf], 0],
    ['an overlong 3-byte form', [0xe0, 0x80, 0xaf], 0],
    ['a surrogate', [0xed, 0xa0, 0x80], 0],
    ['a value past U+10FFFF', [0xf4, 0x90, 0x80, 0x80], 0],
    ['a sequence cut short by the end', [0x61, 0xe6, 0x97], 1],
    ['a sequence broken by ASCII', [0xe6, 0x41, 0x97], 0],
  ])('%s', (_, bytes, invalid) => {
    expect(firstInvalidUtf8(Uint8Array.from(bytes)).invalid).toBe(invalid);
  });

  it('a sequence cut by the end of a chunk is incomplete, not invalid, until the end', () => {
    expect(firstInvalidUtf8(Uint8Array.from([0x61, 0xe6, 0x97]), false)).toEqual({
      invalid: -1,
      incomplete: 1,
    });
  });
});

describe('TextStreamDecoder', () => {
  it.each([1, 2, 3, 5, 7, 64])(
    'reads every encoding alike in chunks of %i bytes (marks and characters cut anywhere)',
    (size) => {
      expect(streamed(utf8, size)).toBe(TEXT);
      expect(streamed(withBom([0xef, 0xbb, 0xbf], utf8), size)).toBe(TEXT);
      expect(streamed(withBom([0xff, 0xfe], utf16(TEXT, 'le')), size)).toBe(TEXT);
      expect(streamed(withBom([0xfe, 0xff], utf16(TEXT, 'be')), size)).toBe(TEXT);
      expect(streamed(latin1('a,b\nCafé,x\n'), size, 'latin1')).toBe('a,b\nCafé,x\n');
    },
  );

  it('passes UTF-8 through unchanged (the same bytes, not a copy per chunk)', () => {
    const decoder = new TextStreamDecoder('f.csv');
    const chunk = utf8.subarray(0, 10);
    decoder.push(utf8.subarray(0, 3));
    expect(decoder.push(chunk).length).toBe(10);
  });

  it.each([1, 4, 1000])(
    'names the line of a bad byte found in a later chunk (chunks of %i, CRLF cut between chunks)',
    (size) => {
      const bytes = new Uint8Array([
        ...new TextEncoder().encode('h\r\nok\r\nok\r\n'),
        ...latin1('caf\xe9\r\n'),
      ]);
      expect(() => streamed(bytes, size)).toThrow(/f\.csv is not UTF-8: line 4 has byte 0xE9/);
    },
  );

  it('refuses an unknown encoding when made', () => {
    expect(() => new TextStreamDecoder('f.csv', 'nope')).toThrow(TextEncodingError);
  });
});
