import { Migration } from '@mikro-orm/migrations';

export class Migration20261125045209 extends Migration {

  override async up(): Promise<void> {
    this.addSql(`alter table \`builds\` add column \`artifact_removed_at\` datetime null;`);
    this.addSql(`alter table \`builds\` add column \`log_removed_at\` datetime null;`);
    this.addSql(`create index \`builds_artifact_key_index\` on \`builds\` (\`artifact_key\`);`);

    this.addSql(`alter table \`versions\` add column \`archive_removed_at\` datetime null;`);
  }

}
