// The values of schema.graphql's enums that the app offers or checks, declared once and named as
// in the schema, in the order the app offers them (a test holds them to schema.graphql).

export const ENUMS = {
  EpisodeStatus: ["QUEUED", "RUNNING", "WAITING", "PAUSED", "EVALUATING", "COMPLETED", "FAILED", "CANCELLED"],
  ActionType: ["SPEAK", "NON_VERBAL_COMMUNICATION", "ACTION", "NONE", "LEAVE"],
  RelationshipType: ["STRANGER", "KNOW_BY_NAME", "ACQUAINTANCE", "FRIEND", "ROMANTIC_RELATIONSHIP", "FAMILY_MEMBER"],
  TurnOrder: ["ROUND_ROBIN", "SIMULTANEOUS", "RANDOM"],
  Redelivery: ["RESUME", "RESTART"],
  SeatTimeout: ["LEAVE", "STAND_IN", "FAIL"],
};

export const ACTION_TYPES = ENUMS.ActionType;
export const RELATIONSHIPS = ENUMS.RelationshipType;
