// `npm start`: the server (main.ts) from the checkout's start copy (launch.js).
import { launch } from './launch.js';

await launch('main');
