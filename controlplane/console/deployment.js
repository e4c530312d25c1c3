// The deployment: its Admin API users (with the hosted entities and roles they are limited
// to) and its hosted entities. Both belong to the whole deployment, not to the entity chosen
// in the header.

import { h, mount } from './dom.js';
import { collection } from './collection.js';

export async function render(view) {
  const [users, entities] = await Promise.all([
    collection({
      title: 'Users', noun: 'user', list: '/users',
      item: (u) => `/users/${encodeURIComponent(u.username)}`, itemTemplate: '/users/{username}',
      name: (u) => u.username,
      columns: [
        ['User name', (u) => h('code', {}, u.username)],
        ['Name', (u) => u.display_name || '—'],
        ['Scope', (u) => ((u.entities || []).length
          ? u.entities.map((e) => `${e.entity ?? e.entity_id ?? e.id}: ${e.role}`).join(', ')
          : 'whole deployment')],
        ['Disabled', (u) => (u.disabled ? 'yes' : 'no')],
      ],
    }),
    collection({
      title: 'Hosted entities', noun: 'hosted entity', list: '/entities',
      item: (e) => `/entities/${e.id}`, itemTemplate: '/entities/{entity}', edit: 'PATCH',
      name: (e) => e.entity_id,
      deleteQuery: (e) => `?confirm=${encodeURIComponent(e.entity_id)}`,
      columns: [
        ['Number', (e) => e.id, { num: true }],
        ['Entity identifier', (e) => h('code', {}, e.entity_id)],
        ['Name', (e) => e.display_name || '—'],
      ],
    }),
  ]);
  mount(view, h('h1', {}, 'Users and hosted entities'), users, entities);
}
