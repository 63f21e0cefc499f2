import { runServer } from './serve.ts';

// `npm start`: the service (src/serve.ts). The operator's commands are in src/cli.ts.
runServer(process.argv.slice(2), 'npm start --');
