// check_responses.js DIR — decodes every <api>_v<N>.bin in DIR with kafkajs 2.2.4's own response
// decoder (src/protocol/requests/<api>/v<N>/response.js); exits 1 on any failure. Run by hand:
//   NODE_PATH=<dir with kafkajs>/node_modules node tests/kafka/capture/check_responses.js \
//       tests/kafka/golden_responses
const fs = require('fs'), path = require('path')
const dir = process.argv[2]
let bad = 0, ok = 0
for (const f of fs.readdirSync(dir).filter(f => f.endsWith('.bin') && f.includes('_v')).sort()) {
  const [api, v] = f.slice(0, -4).split('_v')
  let mod
  try { mod = require(`kafkajs/src/protocol/requests/${api}/v${v}/response`) } catch (e) { console.log('no kafkajs decoder', f); continue }
  try {
    const buf = fs.readFileSync(path.join(dir, f))
    const r = mod.decode(buf)
    const res = r instanceof Promise ? null : r
    Promise.resolve(r).then(x => { console.log(f, JSON.stringify(x, (k, val) => typeof val === 'bigint' ? val.toString() : (val && val.type === 'Buffer' ? '<buf>' : val)).slice(0, 300)); ok++ }, e => { console.log('FAIL', f, e.message); bad++ })
  } catch (e) { console.log('FAIL', f, e.message); bad++ }
}
process.on('exit', () => { console.log('ok', ok, 'bad', bad); if (bad) process.exitCode = 1 })
