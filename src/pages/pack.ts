import { packPrice } from "../payments/credits";
import type { Skill } from "../skills/types";

/** The smallest card pack of a skill, by the server's own rule and price (credits.ts packPrice). */
export function cardPack(skill: Skill) {
  const { calls, amountCents } = packPrice(skill.price_atomic);
  return { calls, amountUsd: amountCents / 100 };
}

export const packLabel = (skill: Skill) => {
  const { calls, amountUsd } = cardPack(skill);
  return `Buy ${calls} calls for $${amountUsd.toFixed(2)}`;
};
