/** The source of the module bundled in place of mime-types (scripts/mime-types-table.mjs). */
export function mimeTypesModule(): string;
