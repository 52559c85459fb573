/** The `tagger` process: runs the command line it was given (bin/tagger.js starts the built copy). */
import { main } from './index.js';

process.exitCode = await main(process.argv.slice(2));
