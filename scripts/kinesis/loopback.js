// Preloaded (node -r) into the Kinesis test servers: every server they start listens on
// 127.0.0.1, whatever host it asks for (kinesis-local binds 0.0.0.0 and has no setting).
const net = require('net');
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  if (typeof args[0] === 'object' && args[0] !== null) {
    args[0] = { ...args[0], host: '127.0.0.1' };
    return listen.apply(this, args);
  }
  const port = args[0];
  const callback = args.find((a) => typeof a === 'function');
  return callback
    ? listen.call(this, port, '127.0.0.1', callback)
    : listen.call(this, port, '127.0.0.1');
};
