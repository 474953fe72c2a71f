// Multipart uploads left open (a put that crashed, an upload session never finished) are aborted
// once they are two days old: at start, and by the sweep every few hours. Younger ones are kept.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { MinioStorage } from '../../../plugins/storage-minio/minio-storage.js';
import { startS3Server, type S3Server } from '../../helpers/s3-server.js';

const DAY = 24 * 60 * 60 * 1000;
const bucket = 'stale-uploads';
let s3: S3Server;
const storage = () => new MinioStorage({ client: s3.client, bucket, region: 'us-east-1', createBucket: true });

test.before(async () => {
  s3 = await startS3Server();
});
test.after(async () => s3?.close());

test('uploads open for more than two days are aborted; younger ones are kept', async () => {
  const first = storage();
  await first.start();
  const old = await first.direct.createMultipart('uploads/old.zip');
  const young = await first.direct.createMultipart('uploads/young.zip');
  const recent = await first.direct.createMultipart('uploads/recent.zip');
  await s3.ageUpload(bucket, old, 2 * DAY + 60_000);
  await s3.ageUpload(bucket, young, 2 * DAY - 60 * 60 * 1000);
  assert.is(await first.abortStaleUploads(), 1);
  assert.equal((await s3.pendingUploads(bucket)).sort(), [
    `uploads/recent.zip ${recent}`,
    `uploads/young.zip ${young}`,
  ]);
  await first.stop();

  // A process that starts (after a crash, say) sweeps at once.
  await s3.ageUpload(bucket, young, 3 * DAY);
  const next = storage();
  await next.start();
  assert.equal(await s3.pendingUploads(bucket), [`uploads/recent.zip ${recent}`]);
  await next.direct.abortMultipart('uploads/recent.zip', recent);
  await next.stop();
  assert.equal(await s3.pendingUploads(bucket), []);
});

test.run();
