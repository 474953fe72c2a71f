import { Migration } from '@mikro-orm/migrations';

export class Migration20261129085316 extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create index \`deployments_pruned_at_ended_at_index\` on \`deployments\` (\`pruned_at\`, \`ended_at\`);`);
  }

}
