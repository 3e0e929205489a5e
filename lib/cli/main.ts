#!/usr/bin/env node
/**
 * Entry point of the `dynamo-lock` command (the package's `bin`). It sets what must be set
 * before the AWS SDK loads, then loads the program: with an `import`, the SDK would be loaded
 * (imports are hoisted) before the first line ran.
 */
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

// eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded after the line above, which an import would not be
const { main } = require('./run') as typeof import('./run');
void main(process.argv);

export {};
