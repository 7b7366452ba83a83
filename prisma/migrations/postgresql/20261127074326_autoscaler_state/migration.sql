-- CreateTable
CREATE TABLE "AutoscalerState" (
    "deploymentId" TEXT NOT NULL,
    "upSince" BIGINT,
    "upTo" INTEGER,
    "downSince" BIGINT,
    "downTo" INTEGER,
    "readyAt" BIGINT,
    "wakeRequested" BOOLEAN NOT NULL DEFAULT false,

    CONSTRAINT "AutoscalerState_pkey" PRIMARY KEY ("deploymentId")
);
