import { Migration } from '@mikro-orm/migrations';

export class Migration20261129120532 extends Migration {

  override async up(): Promise<void> {
    this.addSql(`alter table \`deploy_hooks\` add column \`created_by\` json null;`);

    this.addSql(`alter table \`upload_sessions\` add column \`user_id\` text null;`);

    this.addSql(`alter table \`webhooks\` add column \`created_by\` json null;`);
  }

}
