import { evidenceProperty } from './evidence-property.ts';

/** Part 1 of the evidence property's cases (tests/orders/evidence-property.ts says what it checks). */
evidenceProperty(1);
