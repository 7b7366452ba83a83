import { countTokens } from '../server/engines/tokens.ts';
const rnd = (N: number, alphabet: string[], seed: number) => { let s = ''; let x = seed; while (s.length < N) { x = (x * 1103515245 + 12345) >>> 0; s += alphabet[(x >>> 8) % alphabet.length]; } return s.slice(0, N); };
const L = 'abcdefghijklmnopqrstuvwxyz'.split('');
const words = 'the quick brown fox jumps over the lazy dog while Photosynthesis turns light into chemical energy, 1234 and databases store rows.'.split(' ');
const ms = (f: () => void) => { const c = process.cpuUsage(); f(); const d = process.cpuUsage(c); return ((d.user + d.system) / 1000).toFixed(1); };
const out: string[] = [];
for (let seed = 1; seed <= 6; seed++) { const s = rnd(200_000, L, seed * 7919); out.push(ms(() => countTokens(s))); }
console.log('random letters 200KB CPU ms:', out.join(' '));
const o: string[] = [];
for (let seed = 1; seed <= 4; seed++) { const s = rnd(40_000, words, seed).split('').join('') ; const t = rnd(200_000/6, words, seed*31).length; o.push(ms(() => countTokens(rnd(40000, words.map(w=>w+' '), seed)))); }
console.log('ordinary CPU ms (incl. generation):', o.join(' '));
