import { Migration } from '@mikro-orm/migrations';

export class Migration20261124221620 extends Migration {

  override async up(): Promise<void> {
    this.addSql(`alter table \`deployments\` add column \`preview\` integer not null default false;`);
    this.addSql(`alter table \`deployments\` add column \`expires_at\` datetime null;`);

    this.addSql(`alter table \`projects\` add column \`preview_visibility\` text not null default 'private';`);
  }

}
