// dynalite (DynamoDB) on 127.0.0.1:PORT, tables ready at once: the KCL lease tables of the
// lag tests live here.
const dynalite = require('dynalite');
const server = dynalite({ createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 });
server.listen(+process.argv[2], '127.0.0.1', (err) => {
  if (err) throw err;
});
