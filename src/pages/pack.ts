import { packSize } from "../payments/credits";
import type { Skill } from "../skills/types";

/** The smallest card pack of a skill, by the server's own rule (credits.ts packSize). */
export function cardPack(skill: Skill) {
  const calls = packSize(skill.price_atomic);
  const cents = (BigInt(calls) * skill.price_atomic) / 10_000n;
  return { calls, amountUsd: Number(cents) / 100 };
}

export const packLabel = (skill: Skill) => {
  const { calls, amountUsd } = cardPack(skill);
  return `Buy ${calls} calls for $${amountUsd.toFixed(2)}`;
};
