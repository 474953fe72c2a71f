import * as pulumi from '@pulumi/pulumi';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { ReleaseSpec } from '../../../core/ports/deployer.js';

/** Every resource the program registered: its type, name and inputs. */
const made: { type: string; name: string; inputs: Record<string, any> }[] = [];
await pulumi.runtime.setMocks(
  {
    newResource(args) {
      made.push({ type: args.type, name: args.name, inputs: args.inputs });
      const state: Record<string, unknown> = { ...args.inputs };
      if (args.type === 'docker:index/container:Container')
        state.networkDatas = [
          { networkName: 'hoist-net', ipAddress: '172.30.0.7', gateway: '', ipPrefixLength: 16, macAddress: '' },
        ];
      return { id: `${args.name}-id`, state };
    },
    call: (args) => args.inputs,
  },
  'hoist-releases',
  'test',
);
const { networkProgram, releaseProgram } = await import('../../../plugins/deployer-pulumi/release-program.js');

/** The value of an Output (the mocks resolve them). */
const valueOf = <T>(o: pulumi.Output<T>) => new Promise<T>((resolve) => o.apply(resolve));

const spec: ReleaseSpec = {
  deploymentId: '11111111-2222-3333-4444-555555555555',
  accountId: '77777777-8888-7777-6666-555555555555',
  projectId: '99999999-8888-7777-6666-555555555555',
  slug: 'shop',
  runtime: 'node',
  artifactKey: 'artifacts/x.zip',
  startCommand: 'npm start',
  env: { GREETING: 'hi' },
};

test(
  'a release is an image built from its context and a hardened, limited, labelled ' + 'container on the network',
  async () => {
    made.length = 0;
    const { url } = await releaseProgram({
      spec,
      context: '/work/ctx',
      network: 'hoist-net',
      memoryMb: 256,
      cpuMillis: 500,
      diskMb: 48,
      runtime: 'runsc',
    })();
    assert.is(await valueOf(url), 'http://172.30.0.7:8080');

    const image = made.find((r) => r.type === 'docker:index/image:Image')!;
    assert.ok(image, 'an image');
    assert.is(image.inputs.imageName, `hoist-release:${spec.deploymentId}`);
    assert.is(image.inputs.build.context, '/work/ctx');
    assert.is(image.inputs.build.dockerfile, '/work/ctx/Dockerfile');
    assert.is(image.inputs.skipPush, true);

    const c = made.find((r) => r.type === 'docker:index/container:Container')!.inputs;
    assert.is(c.name, `hoist-${spec.deploymentId}`);
    assert.is(c.image, `hoist-release:${spec.deploymentId}`);
    assert.is(c.memory, 256);
    assert.is(c.memorySwap, 256);
    assert.is(c.cpus, '0.5');
    assert.is(c.readOnly, true);
    assert.equal(c.tmpfs, { '/tmp': 'rw,nosuid,nodev,size=48m,uid=10001,gid=10001,mode=1777' });
    assert.equal(c.ulimits, [{ name: 'fsize', soft: 48 * 1024 * 1024, hard: 48 * 1024 * 1024 }]);
    assert.is(c.runtime, 'runsc');
    assert.is(c.init, true);
    assert.equal(c.capabilities, { drops: ['ALL'] });
    assert.equal(c.securityOpts, ['no-new-privileges']);
    assert.is(c.privileged, false);
    assert.is(c.user, '10001:10001');
    assert.equal(c.networksAdvanced, [{ name: 'hoist-net' }]);
    assert.is(c.restart, 'on-failure');
    assert.is(c.maxRetryCount, 5);
    assert.equal(
      [...c.labels].sort((a: any, b: any) => a.label.localeCompare(b.label)),
      [
        { label: 'hoist.deployment', value: spec.deploymentId },
        { label: 'hoist.managed', value: 'true' },
        { label: 'hoist.project', value: spec.projectId },
      ],
    );
    assert.ok(c.envs.includes('GREETING=hi'));
    assert.ok(c.envs.includes('NODE_OPTIONS=--max-old-space-size=192'), c.envs.join(' '));
    assert.ok(c.envs.includes('HOME=/tmp'));
  },
);

test('the network stack holds one labelled bridge network', async () => {
  made.length = 0;
  const { network } = await networkProgram('hoist-net')();
  assert.is(await valueOf(network), 'hoist-net');
  assert.is(made.length, 1);
  assert.is(made[0].type, 'docker:index/network:Network');
  assert.equal(made[0].inputs, {
    name: 'hoist-net',
    driver: 'bridge',
    labels: [{ label: 'hoist.managed', value: 'true' }],
  });
});

test.run();
