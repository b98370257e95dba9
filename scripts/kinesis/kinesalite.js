// kinesalite on 127.0.0.1:PORT, streams ready at once, room for many shards.
const kinesalite = require('kinesalite');
const server = kinesalite({ createStreamMs: 0, deleteStreamMs: 0, updateStreamMs: 0, shardLimit: 200 });
server.listen(+process.argv[2], '127.0.0.1', (err) => {
  if (err) throw err;
});
